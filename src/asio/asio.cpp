// The one translation unit that compiles Asio's non-template definitions
// (BOOST_ASIO_SEPARATE_COMPILATION is set on the project's own targets: exedev_asio_mode).
#include <boost/asio/impl/src.hpp>
