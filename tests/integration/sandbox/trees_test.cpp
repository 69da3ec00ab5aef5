// Tree transfers (SupportsTreeTransfer) on the emulator over both transports: a tree with every
// kind of entry round-trips exactly, a symlink leaving the tree is refused, excludes hold, an
// unchanged tree sends only the manifest, a changed one only what changed, and a cancelled
// upload leaves the destination as it was.
#include "fixture.hpp"
#include "support/sshd_server.hpp"

#include <exedev/testing/co_check.hpp>
#include <exedev/workspace/local_backend.hpp>
#include <exedev/workspace/workspace.hpp>

#include <sys/stat.h>

#include <fstream>
#include <map>
#include <random>

using namespace sbx;
using exedev::workspace::Command;
using exedev::workspace::TreeProgress;
using exedev::workspace::TreeTransferOptions;
using exedev::workspace::TreeTransferResult;
namespace fs = std::filesystem;
namespace support = exedev::test_support;

namespace {

struct TempDir {
  TempDir() : path(fs::temp_directory_path() / ("exedev-trees-" + random_suffix())) { fs::create_directories(path); }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
  fs::path path;
};

void write_file(const fs::path& path, const std::string& data, fs::perms mode = fs::perms(0644)) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << data;
  fs::permissions(path, mode);
}

std::string random_bytes(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 engine{seed};
  std::string out(n, '\0');
  for (auto& c : out) c = static_cast<char>(engine() & 0xFF);
  return out;
}

const std::string kOddName = "name with spaces\nand a newline.txt";
const std::string kLongName = "long/" + std::string(120, 'n') + ".txt";

// The test tree: nested directories, an empty one, an executable, a symlink inside and one
// leaving the tree, odd and long names, a 0-byte and an 8 MiB file, and a .git to exclude.
void make_tree(const fs::path& root) {
  write_file(root / "src/a/b/c.txt", "nested\n");
  fs::create_directories(root / "empty");
  write_file(root / "run.sh", "#!/bin/sh\necho hi\n", fs::perms(0755));
  write_file(root / kOddName, "odd\n");
  write_file(root / kLongName, "long\n");
  write_file(root / "zero.bin", "");
  write_file(root / "big.bin", random_bytes(8 * 1024 * 1024, 7), fs::perms(0640));
  write_file(root / ".git/HEAD", "ref: refs/heads/main\n");
  fs::create_symlink("src/a/b/c.txt", root / "link_in");
  fs::create_symlink("../a", root / "src/up");
  fs::create_symlink("../../outside", root / "src/link_out");
}

// path -> "type mode contents-or-target", lstat-style.
std::map<std::string, std::string> snapshot(const fs::path& root) {
  std::map<std::string, std::string> out;
  for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator(); ++it) {
    const auto rel = fs::relative(it->path(), root).string();
    struct stat info {};
    REQUIRE(::lstat(it->path().c_str(), &info) == 0);
    const auto mode = std::to_string(info.st_mode & 07777);
    if (S_ISLNK(info.st_mode)) {
      out[rel] = "l " + fs::read_symlink(it->path()).string();
    } else if (S_ISDIR(info.st_mode)) {
      out[rel] = "d " + mode;
    } else {
      std::ifstream in(it->path(), std::ios::binary);
      out[rel] = "f " + mode + " " + std::string(std::istreambuf_iterator<char>(in), {});
    }
  }
  return out;
}

std::map<std::string, std::string> without(std::map<std::string, std::string> tree, const std::vector<std::string>& prefixes) {
  for (auto it = tree.begin(); it != tree.end();) {
    bool drop = false;
    for (const auto& prefix : prefixes) drop = drop || it->first == prefix || it->first.rfind(prefix + "/", 0) == 0;
    it = drop ? tree.erase(it) : std::next(it);
  }
  return tree;
}

TreeTransferOptions tree_options() {
  TreeTransferOptions o;
  o.excludes = {".git/", "node_modules/"};
  return o;
}

// An emulator that knows one client key (for the SSH transport).
struct Keys {
  Keys() : dir(fs::temp_directory_path() / ("exedev-trees-keys-" + random_suffix())) {
    fs::create_directories(dir);
    key = support::make_key(dir, "registered");
  }
  ~Keys() {
    std::error_code ignored;
    fs::remove_all(dir, ignored);
  }
  exedev::emulator::Options emulator_options() const {
    exedev::emulator::Options o;
    o.ssh_authorized_keys.push_back(key.public_line());
    return o;
  }
  fs::path dir;
  support::KeyPair key;
};

std::shared_ptr<exedev::SandboxBackend> make_backend(Fixture& f, Keys& keys, exedev::Transport transport) {
  exedev::SandboxBackendOptions o;
  o.spec = f.spec({.working_dir = "work"});
  o.scope_tag = f.scope();
  o.client_options = f.client_options();
  o.readiness = f.readiness();
  o.transport = transport;
  o.ssh.private_key_file = keys.key.private_key;
  o.ssh.use_agent = false;
  o.ssh.use_config = false;  // the user's ~/.ssh/config must not change what a test does
  o.ssh.known_hosts_file = f.emu().ssh_known_hosts();
  o.ssh.hosts_file = f.emu().ssh_hosts_file();
  o.ssh.host_key_policy = exedev::HostKeyPolicy::strict;
  return std::make_shared<exedev::SandboxBackend>(o);
}

Task<std::string> sh(exedev::workspace::Workspace& w, std::string line) {
  std::vector<std::string> argv{"sh", "-c"};
  argv.push_back(std::move(line));
  const auto result = co_await w.run(Command::argv(std::move(argv)));
  INFO(result.stderr_text);
  REQUIRE(result.exit_code == 0);
  co_return result.stdout_text;
}

// Runs an upload and cancels it (terminal) from its first progress report.
Task<std::exception_ptr> upload_cancelled_at_first_progress(exedev::workspace::Workspace& w, std::string local, std::string remote) {
  const auto ex = co_await asio::this_coro::executor;
  asio::cancellation_signal signal;
  bool done = false;
  bool emitted = false;
  std::exception_ptr outcome;
  TreeTransferOptions o = tree_options();
  o.on_progress = [&](const TreeProgress&) {
    if (!emitted) {
      emitted = true;
      signal.emit(asio::cancellation_type::terminal);
    }
  };
  auto uploading = w.upload_tree(local, remote, o);
  asio::co_spawn(ex, capture(std::move(uploading)), asio::bind_cancellation_slot(signal.slot(), [&](std::exception_ptr e, std::exception_ptr thrown) {
                   outcome = e ? e : thrown;
                   done = true;
                 }));
  while (!done) co_await sleep_for(20ms);
  REQUIRE(emitted);
  co_return outcome;
}

void round_trip(exedev::Transport transport) {
  Keys keys;
  Fixture f(keys.emulator_options());
  if (f.skip()) return;
  exedev::testing::run([&](Executor) -> Task<void> {
    auto backend = make_backend(f, keys, transport);
    exedev::workspace::Workspace w(backend);
    TempDir local;
    const fs::path source = local.path / "source";
    make_tree(source);
    const auto working_dir = co_await w.working_dir();
    CHECK(backend->transport_in_use() == transport);

    // First upload: everything but the excluded and the refused.
    std::vector<TreeProgress> reports;
    TreeTransferOptions o = tree_options();
    o.on_progress = [&](const TreeProgress& p) { reports.push_back(p); };
    const TreeTransferResult first = co_await w.upload_tree(source.string(), "tree", o);
    CHECK(first.refused == std::vector<std::string>{"src/link_out"});
    CHECK(first.files == 6);
    CHECK(first.files_sent == 6);
    CHECK(first.symlinks == 2);
    CHECK(first.archive_bytes > 0);
    REQUIRE_FALSE(reports.empty());
    CHECK(reports.back().bytes_done == reports.back().bytes_total);
    CHECK(reports.back().files_done == 6);
    CO_CHECK(co_await sh(w, "stat -c '%a' tree/run.sh tree/big.bin tree/empty") == "755\n640\n755\n");
    CO_CHECK(co_await sh(w, "readlink tree/link_in; cat tree/link_in; test -e tree/.git || echo no-git") ==
          "src/a/b/c.txt\nnested\nno-git\n");
    CO_CHECK(co_await sh(w, "test -e tree/src/link_out || test -L tree/src/link_out || echo refused") == "refused\n");
    CO_CHECK(co_await sh(w, "wc -c < tree/zero.bin; wc -c < tree/big.bin") == "0\n8388608\n");
    CO_CHECK(co_await sh(w, "ls -a | grep -c exedev-tree || true") == "0\n");

    // Unchanged: only the manifest travels (on /exec: one request).
    f.emu().clear_commands();
    const TreeTransferResult again = co_await w.upload_tree(source.string(), working_dir + "/tree", tree_options());
    CHECK(again.archive_bytes == 0);
    CHECK(again.files_sent == 0);
    CHECK(again.entries_removed == 0);
    if (transport == exedev::Transport::exec) CHECK(f.emu().commands().size() == 1);

    // Changed: one file edited, one removed, one added.
    write_file(source / "src/a/b/c.txt", "edited\n");
    fs::remove(source / "zero.bin");
    write_file(source / "new dir/new.txt", "new\n");
    const TreeTransferResult changed = co_await w.upload_tree(source.string(), "tree", tree_options());
    CHECK(changed.files_sent == 2);
    CHECK(changed.entries_removed == 1);
    CO_CHECK(co_await sh(w, "cat tree/link_in 'tree/new dir/new.txt'; test -e tree/zero.bin || echo gone") == "edited\nnew\ngone\n");

    // Download into a fresh directory: the same tree, bytes, modes and links.
    const fs::path copy = local.path / "copy";
    const TreeTransferResult down = co_await w.download_tree("tree", copy.string(), tree_options());
    CHECK(down.files == 6);
    CHECK(down.refused.empty());
    const auto expected = without(snapshot(source), {".git", "src/link_out"});
    CHECK(snapshot(copy) == expected);
    // Downloading again changes nothing and moves no archive.
    const TreeTransferResult down_again = co_await w.download_tree("tree", copy.string(), tree_options());
    CHECK(down_again.archive_bytes == 0);
    CHECK(snapshot(copy) == expected);

    // A cancelled upload leaves the destination as it was, and no job directory behind.
    const auto before = co_await sh(w, "cd tree && find . | LC_ALL=C sort | cksum; cat big.bin | cksum");
    write_file(source / "big.bin", random_bytes(8 * 1024 * 1024, 8));
    write_file(source / "more.bin", random_bytes(2 * 1024 * 1024, 9));
    const auto cancelled = co_await upload_cancelled_at_first_progress(w, source.string(), "tree");
    CHECK(is_cancellation(cancelled));
    CO_CHECK(co_await sh(w, "cd tree && find . | LC_ALL=C sort | cksum; cat big.bin | cksum") == before);
    CO_CHECK(co_await sh(w, "ls -a | grep -c exedev-tree || true") == "0\n");

    co_await backend->close();
  }, limits(600s));
}

mode_t umask_now() {
  const mode_t mask = ::umask(022);
  ::umask(mask);
  return mask;
}

struct stat lstat_of(const fs::path& path) {
  struct stat info {};
  REQUIRE(::lstat(path.c_str(), &info) == 0);
  return info;
}

// A VM's tree with a set-user-id file, a set-group-id sticky directory and two hard-linked
// files (the process on the VM runs as this one, root in most containers): the download makes
// no set-id or sticky entry here, filters the permission bits by the umask (unless asked to
// keep them), and the hard links arrive as two files.
void modes_from_the_vm(exedev::Transport transport) {
  Keys keys;
  Fixture f(keys.emulator_options());
  if (f.skip()) return;
  exedev::testing::run([&](Executor) -> Task<void> {
    auto backend = make_backend(f, keys, transport);
    exedev::workspace::Workspace w(backend);
    CO_CHECK(co_await sh(w, "rm -rf m && mkdir -p m/gs && chmod 3777 m/gs && printf x > m/suid && chmod 4777 m/suid && "
                            "printf shared > m/a && ln m/a m/b && printf y > m/gs/in && stat -c '%a' m/suid m/gs") ==
             "4777\n3777\n");
    TempDir local;
    const fs::path copy = local.path / "m";
    const TreeTransferOptions defaults;  // named: GCC 12 and options temporaries in co_await
    const auto result = co_await w.download_tree("m", copy.string(), defaults);
    CHECK(result.files == 4);
    const auto filtered = static_cast<mode_t>(0777 & ~umask_now());
    for (const auto* name : {"suid", "gs", "gs/in", "a", "b"}) {
      INFO(name);
      const auto info = lstat_of(copy / name);
      CHECK((info.st_mode & (S_ISUID | S_ISGID | S_ISVTX)) == 0);
      CHECK((info.st_mode & 0777 & ~filtered) == 0);
    }
    CHECK((lstat_of(copy / "suid").st_mode & 07777) == filtered);
    CHECK((lstat_of(copy / "gs").st_mode & 07777) == filtered);
    CHECK(lstat_of(copy / "a").st_nlink == 1);
    CHECK(lstat_of(copy / "b").st_nlink == 1);
    std::ifstream b(copy / "b", std::ios::binary);
    CHECK(std::string(std::istreambuf_iterator<char>(b), {}) == "shared");

    // Kept as the VM has them, still without set-id or sticky bits.
    const fs::path kept = local.path / "kept";
    TreeTransferOptions o;
    o.keep_remote_mode_bits = true;
    (void)co_await w.download_tree("m", kept.string(), o);
    CHECK((lstat_of(kept / "suid").st_mode & 07777) == 0777);
    CHECK((lstat_of(kept / "gs").st_mode & 07777) == 0777);
    co_await backend->close();
  }, limits(300s));
}

}  // namespace

TEST_CASE("trees from a VM: no set-id or sticky bits, umask applied, hard links as copies, over /exec", "[integration]") {
  modes_from_the_vm(exedev::Transport::exec);
}

TEST_CASE("trees from a VM: no set-id or sticky bits, umask applied, hard links as copies, over SSH", "[integration]") {
  modes_from_the_vm(exedev::Transport::ssh);
}

TEST_CASE("trees round-trip over /exec", "[integration]") { round_trip(exedev::Transport::exec); }

TEST_CASE("trees round-trip over SSH", "[integration]") { round_trip(exedev::Transport::ssh); }

TEST_CASE("trees on LocalBackend: the same contract, both ends on this machine", "[integration]") {
  exedev::testing::run([&](Executor) -> Task<void> {
    TempDir local;
    const fs::path source = local.path / "source";
    const fs::path environment = local.path / "environment";
    fs::create_directories(environment);
    make_tree(source);
    exedev::workspace::Workspace w(std::make_shared<exedev::workspace::LocalBackend>(environment.string()));
    const auto first = co_await w.upload_tree(source.string(), "tree", tree_options());
    CHECK(first.refused == std::vector<std::string>{"src/link_out"});
    const auto expected = without(snapshot(source), {".git", "src/link_out"});
    CHECK(snapshot(environment / "tree") == expected);
    const auto again = co_await w.upload_tree(source.string(), "tree", tree_options());
    CHECK(again.archive_bytes == 0);
    const fs::path copy = local.path / "copy";
    co_await w.download_tree("tree", copy.string(), tree_options());
    CHECK(snapshot(copy) == expected);
  }, limits(120s));
}
