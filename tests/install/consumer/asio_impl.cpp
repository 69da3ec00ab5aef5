// The consumer's own copy of Asio's definitions (CONSUMER_COMPILES_ASIO): a program that
// compiles Asio separately must link with exedev without duplicate definitions.
#include <boost/asio/impl/src.hpp>
