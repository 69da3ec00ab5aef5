// The one translation unit that compiles Asio's non-template definitions
// (BOOST_ASIO_SEPARATE_COMPILATION is set on every target that links exedev::asio).
#include <boost/asio/impl/src.hpp>
