# Makes every global definition in a static archive weak (see src/asio/CMakeLists.txt).
# Undefined references are left strong on purpose: weak ones would let the linker drop the
# shared libraries that provide them (--as-needed) and resolve them to null.
# Usage: cmake -DNM=… -DOBJCOPY=… -DARCHIVE=… -P weaken_definitions.cmake
execute_process(COMMAND ${NM} --defined-only --extern-only ${ARCHIVE}
                OUTPUT_VARIABLE listing RESULT_VARIABLE result)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "nm failed on ${ARCHIVE}")
endif()
# nm: "<address> <type> <name>"; uppercase B D G R S T are strong global definitions.
string(REGEX MATCHALL "[0-9a-f]+ [BDGRST] [^\n]+" strong "${listing}")
list(TRANSFORM strong REPLACE "^[0-9a-f]+ [BDGRST] " "")
list(REMOVE_DUPLICATES strong)
list(JOIN strong "\n" names)
set(list_file ${ARCHIVE}.weaken)
file(WRITE ${list_file} "${names}\n")
execute_process(COMMAND ${OBJCOPY} --weaken-symbols=${list_file} ${ARCHIVE} RESULT_VARIABLE result)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "objcopy failed on ${ARCHIVE}")
endif()
