// B2 client CPU per request: `whoami` against a fixed-answer TLS server on loopback, side by side
// in one run:
//   exedev      exedev::Client::whoami (keep-alive pool, JSON parsing, error mapping)
//   bare Beast  a synchronous Beast + OpenSSL keep-alive loop: the floor for this stack
//   bare async  the same loop as an Asio coroutine (async reads and writes through the
//               reactor, no timeouts): what asynchrony itself costs, before any client logic
//   python      Python's http.client over ssl (python3 from the machine)
// CPU is the client process's user + system time only: the server runs in a child process
// (and Python in another, measured with wait4). Then throughput: the same client one request
// at a time and with 64 in flight, against a server that answers after a fixed delay standing
// for the network round trip (on loopback with no delay, concurrency would only measure how
// two cores share the client and the server).
// Goals: exedev <= 1.5 x bare Beast CPU per request; 64 in flight >= 5 x sequential.

#include <exedev/client.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

constexpr const char* answer = "{\"email\":\"bench@example.com\",\"region\":\"lax\"}\n";
constexpr const char* token = "exe1.AAAAAAAAAAAAAAAAAAAAAAAAAA";  // the form of a token; the server ignores it

double cpu_seconds(const rusage& usage) {
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

double own_cpu_seconds() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return cpu_seconds(usage);
}

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// --- the fixed-answer server (runs in a child process) ----------------------------------------

void serve_connection(asio::ip::tcp::socket socket, asio::ssl::context& tls, std::chrono::milliseconds delay) {
  beast::error_code error;
  asio::ssl::stream<asio::ip::tcp::socket> stream(std::move(socket), tls);
  stream.handshake(asio::ssl::stream_base::server, error);
  beast::flat_buffer buffer;
  while (!error) {
    http::request<http::string_body> request;
    http::read(stream, buffer, request, error);
    if (error) break;
    if (delay.count() > 0) std::this_thread::sleep_for(delay);  // the simulated round trip
    http::response<http::string_body> response(http::status::ok, request.version());
    response.set(http::field::content_type, "application/json; charset=utf-8");
    response.keep_alive(request.keep_alive());
    response.body() = answer;
    response.prepare_payload();
    http::write(stream, response, error);
  }
}

[[noreturn]] void run_server(int port_pipe, const fs::path& cert, const fs::path& key, std::chrono::milliseconds delay) {
  asio::io_context io;
  asio::ssl::context tls(asio::ssl::context::tls_server);
  tls.use_certificate_chain_file(cert.string());
  tls.use_private_key_file(key.string(), asio::ssl::context::pem);
  asio::ip::tcp::acceptor acceptor(io, {asio::ip::make_address("127.0.0.1"), 0});
  const auto port = acceptor.local_endpoint().port();
  if (::write(port_pipe, &port, sizeof port) != sizeof port) std::_Exit(1);
  ::close(port_pipe);
  for (;;) {
    auto socket = acceptor.accept();
    socket.set_option(asio::ip::tcp::no_delay(true));
    std::thread(serve_connection, std::move(socket), std::ref(tls), delay).detach();
  }
}

struct Server {
  pid_t pid = -1;
  std::uint16_t port = 0;
};

Server start_server(const fs::path& cert, const fs::path& key, std::chrono::milliseconds delay) {
  int fds[2];
  if (::pipe(fds) != 0) throw std::runtime_error("pipe failed");
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    ::close(fds[0]);
    try {
      run_server(fds[1], cert, key, delay);
    } catch (...) {
      std::_Exit(1);
    }
  }
  ::close(fds[1]);
  Server server{pid, 0};
  if (::read(fds[0], &server.port, sizeof server.port) != sizeof server.port) throw std::runtime_error("the server did not start");
  ::close(fds[0]);
  return server;
}

void stop_server(const Server& server) {
  ::kill(server.pid, SIGKILL);
  ::waitpid(server.pid, nullptr, 0);
}

// --- the three clients ---------------------------------------------------------------------------

struct Measure {
  double cpu = 0;   // seconds of the client's CPU
  double wall = 0;  // seconds
};

exedev::ClientOptions client_options(std::uint16_t port, const fs::path& ca, std::size_t connections) {
  exedev::ClientOptions options;
  options.endpoint = "https://127.0.0.1:" + std::to_string(port);
  options.ca_file = ca.string();
  options.token = token;
  options.max_connections = connections;
  options.retry.max_retries = 0;
  return options;
}

// `requests` whoami calls spread over `in_flight` coroutines on one thread.
Measure exedev_client(std::uint16_t port, const fs::path& ca, int requests, int in_flight) {
  asio::io_context io;
  exedev::Client client(io.get_executor(), client_options(port, ca, static_cast<std::size_t>(in_flight)));
  int remaining = requests;
  std::exception_ptr failure;
  const auto worker = [&]() -> asio::awaitable<void> {
    while (remaining > 0) {
      --remaining;
      const auto who = co_await client.whoami();
      if (who.email != "bench@example.com") throw std::runtime_error("whoami: wrong answer");
    }
  };
  // One warm-up request opens the first connection outside the measurement.
  asio::co_spawn(io, client.whoami(), [&](std::exception_ptr e, exedev::WhoAmI) { failure = e; });
  io.run();
  io.restart();
  const double cpu_before = own_cpu_seconds();
  const auto start = Clock::now();
  for (int i = 0; i < in_flight; ++i)
    asio::co_spawn(io, worker(), [&](std::exception_ptr e) { if (e && !failure) failure = e; });
  io.run();
  Measure measure{own_cpu_seconds() - cpu_before, seconds_since(start)};
  io.restart();
  asio::co_spawn(io, client.close(), [&](std::exception_ptr e) { if (e && !failure) failure = e; });
  io.run();
  if (failure) std::rethrow_exception(failure);
  return measure;
}

http::request<http::string_body> whoami_request() {
  http::request<http::string_body> request(http::verb::post, "/exec", 11);
  request.set(http::field::host, "127.0.0.1");
  request.set(http::field::authorization, std::string("Bearer ") + token);
  request.set(http::field::content_type, "text/plain");
  request.body() = "whoami";
  request.prepare_payload();
  return request;
}

// A verified TLS connection to the server, made synchronously (outside every measurement).
struct BareConnection {
  asio::ssl::context tls{asio::ssl::context::tls_client};
  std::optional<asio::ssl::stream<asio::ip::tcp::socket>> stream;
  beast::flat_buffer buffer;

  BareConnection(asio::io_context& io, std::uint16_t port, const fs::path& ca) {
    tls.load_verify_file(ca.string());
    tls.set_verify_mode(asio::ssl::verify_peer);
    stream.emplace(io, tls);
    stream->set_verify_callback(asio::ssl::host_name_verification("127.0.0.1"));
    stream->next_layer().connect({asio::ip::make_address("127.0.0.1"), port});
    stream->next_layer().set_option(asio::ip::tcp::no_delay(true));
    stream->handshake(asio::ssl::stream_base::client);
  }
};

void check(const http::response<http::string_body>& response) {
  if (response.result() != http::status::ok) throw std::runtime_error("bare Beast: wrong status");
}

Measure bare_beast(std::uint16_t port, const fs::path& ca, int requests) {
  asio::io_context io;
  BareConnection c(io, port, ca);
  const auto once = [&] {
    http::write(*c.stream, whoami_request());
    http::response<http::string_body> response;
    http::read(*c.stream, c.buffer, response);
    check(response);
  };
  once();  // warm-up, as for the others
  const double cpu_before = own_cpu_seconds();
  const auto start = Clock::now();
  for (int i = 0; i < requests; ++i) once();
  return {own_cpu_seconds() - cpu_before, seconds_since(start)};
}

Measure bare_async(std::uint16_t port, const fs::path& ca, int requests) {
  asio::io_context io;
  BareConnection c(io, port, ca);
  const auto loop = [&](int count) -> asio::awaitable<void> {
    for (int i = 0; i < count; ++i) {
      auto request = whoami_request();
      co_await http::async_write(*c.stream, request, asio::use_awaitable);
      http::response<http::string_body> response;
      co_await http::async_read(*c.stream, c.buffer, response, asio::use_awaitable);
      check(response);
    }
  };
  std::exception_ptr failure;
  const auto note = [&](std::exception_ptr e) { failure = e; };
  asio::co_spawn(io, loop(1), note);  // warm-up
  io.run();
  io.restart();
  const double cpu_before = own_cpu_seconds();
  const auto start = Clock::now();
  asio::co_spawn(io, loop(requests), note);
  io.run();
  if (failure) std::rethrow_exception(failure);
  return {own_cpu_seconds() - cpu_before, seconds_since(start)};
}

Measure python_client(std::uint16_t port, const fs::path& ca, int requests, const fs::path& work) {
  const auto script = work / "client.py";
  std::ofstream(script) << "import http.client, ssl, sys, time\n"
                           "ctx = ssl.create_default_context(cafile=sys.argv[2])\n"
                           "conn = http.client.HTTPSConnection('127.0.0.1', int(sys.argv[1]), context=ctx)\n"
                           "def once():\n"
                           "    conn.request('POST', '/exec', body=b'whoami', headers={'Authorization': 'Bearer "
                        << token
                        << "', 'Content-Type': 'text/plain'})\n"
                           "    r = conn.getresponse(); body = r.read()\n"
                           "    if r.status != 200: sys.exit(3)\n"
                           "once()\n"
                           "start_cpu = time.process_time(); start = time.monotonic()\n"
                           "for _ in range(int(sys.argv[3])): once()\n"
                           "print(time.process_time() - start_cpu, time.monotonic() - start)\n";
  const auto output = work / "python.out";
  const std::string command = "python3 " + script.string() + " " + std::to_string(port) + " " + ca.string() + " " +
                              std::to_string(requests) + " > " + output.string();
  if (std::system(command.c_str()) != 0) throw std::runtime_error("the Python client failed");
  Measure measure;
  std::ifstream(output) >> measure.cpu >> measure.wall;
  return measure;
}

void make_certificate(const fs::path& work) {
  const std::string command =
      "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj /CN=127.0.0.1"
      " -addext subjectAltName=IP:127.0.0.1 -keyout " +
      (work / "key.pem").string() + " -out " + (work / "cert.pem").string() + " 2>/dev/null";
  if (std::system(command.c_str()) != 0) throw std::runtime_error("openssl could not make a certificate");
}

}  // namespace

int main(int argc, char** argv) try {
  const int requests = argc > 1 ? std::atoi(argv[1]) : 3000;
  const auto work = fs::temp_directory_path() / ("exedev-bench-cpu-" + std::to_string(::getpid()));
  fs::create_directories(work);
  make_certificate(work);
  const auto cert = work / "cert.pem";
  const auto key = work / "key.pem";

  const auto fast = start_server(cert, key, std::chrono::milliseconds(0));
  std::printf("B2 client CPU per request: %d sequential whoami requests on one keep-alive connection\n\n", requests);
  std::printf("%-12s %14s %14s %12s\n", "client", "CPU us/req", "wall us/req", "x bare CPU");
  const auto bare = bare_beast(fast.port, cert, requests);
  const auto async = bare_async(fast.port, cert, requests);
  const auto ours = exedev_client(fast.port, cert, requests, 1);
  const auto python = python_client(fast.port, cert, requests, work);
  const auto row = [&](const char* name, const Measure& m) {
    std::printf("%-12s %14.1f %14.1f %12.2f\n", name, 1e6 * m.cpu / requests, 1e6 * m.wall / requests, m.cpu / bare.cpu);
  };
  row("bare Beast", bare);
  row("bare async", async);
  row("exedev", ours);
  row("python", python);
  stop_server(fast);

  constexpr auto delay = std::chrono::milliseconds(5);
  const auto slow = start_server(cert, key, delay);
  const int concurrent_requests = requests / 2;
  const auto sequential = exedev_client(slow.port, cert, concurrent_requests / 8, 1);
  const auto parallel = exedev_client(slow.port, cert, concurrent_requests, 64);
  stop_server(slow);
  const double sequential_rate = (concurrent_requests / 8) / sequential.wall;
  const double parallel_rate = concurrent_requests / parallel.wall;
  std::printf("\nthroughput, server answering after %lld ms (exedev client, one thread)\n",
              static_cast<long long>(delay.count()));
  std::printf("%-12s %14s %14s\n", "in flight", "requests/s", "x sequential");
  std::printf("%-12d %14.0f %14.2f\n", 1, sequential_rate, 1.0);
  std::printf("%-12d %14.0f %14.2f\n", 64, parallel_rate, parallel_rate / sequential_rate);

  const double cpu_ratio = ours.cpu / bare.cpu;
  std::printf("\ngoal exedev CPU <= 1.5 x bare Beast: %.2f x (%s)\n", cpu_ratio, cpu_ratio <= 1.5 ? "met" : "NOT met");
  std::printf("goal 64 in flight >= 5 x sequential: %.2f x (%s)\n", parallel_rate / sequential_rate,
              parallel_rate / sequential_rate >= 5 ? "met" : "NOT met");
  fs::remove_all(work);
  return 0;
} catch (const std::exception& error) {
  std::fprintf(stderr, "bench_client_cpu: %s\n", error.what());
  return 1;
}
