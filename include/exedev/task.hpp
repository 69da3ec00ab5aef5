#pragma once
// exedev::Task<T>: the type of every asynchronous operation of the library, in every layer
// (workspace::Task is the same alias, brought into that namespace).

#include <boost/asio/awaitable.hpp>

namespace exedev {

/// A coroutine returning T, awaited with co_await on the caller's executor.
template <typename T>
using Task = boost::asio::awaitable<T>;

}  // namespace exedev
