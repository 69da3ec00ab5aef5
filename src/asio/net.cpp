// The one translation unit that compiles Asio's TLS and Beast's non-template definitions
// (BOOST_BEAST_SEPARATE_COMPILATION is set, PRIVATE, on the three targets that include Beast).
#include <boost/asio/ssl/impl/src.hpp>
#include <boost/beast/src.hpp>
