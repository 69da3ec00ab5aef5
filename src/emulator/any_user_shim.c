/* Loaded into the emulator's sshd with LD_PRELOAD (docs/adr/0014-emulator-ssh-front.md).
 * exe.dev's front ignores the login name but for its routing prefixes (`vm+<name>`), while
 * OpenSSH's sshd refuses a name that is no local account before it looks at any key. A name
 * the system does not know is answered as the emulator's own user under that name, so the key
 * script sees the name the client sent and the session runs as the emulator's user. Known names
 * are the system's. Built by CMake and embedded in the emulator (any_user_shim.hpp). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pwd.h>
#include <string.h>
#include <unistd.h>

struct passwd* getpwnam(const char* name) {
  static struct passwd* (*system_getpwnam)(const char*) = NULL;
  static struct passwd any_user;
  static char name_copy[256];
  if (system_getpwnam == NULL) system_getpwnam = (struct passwd * (*)(const char*)) dlsym(RTLD_NEXT, "getpwnam");
  struct passwd* found = system_getpwnam != NULL ? system_getpwnam(name) : NULL;
  if (found != NULL || name == NULL || strlen(name) >= sizeof name_copy) return found;
  const struct passwd* self = getpwuid(geteuid());
  if (self == NULL) return NULL;
  strcpy(name_copy, name);
  any_user = *self;
  any_user.pw_name = name_copy;
  return &any_user;
}
