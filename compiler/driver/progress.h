// Where a long compile is, on stderr (nanoc --progress, issue #10 item 4).
//
// Silent for the first second, so that short compiles print nothing. Then,
// on a terminal, one status line redrawn in place ("\r") and erased at the
// end:
//   nanoc: code generation 37/120 kernels (4.2 s)
// and, into a file or a pipe (--progress), one line per stage and a kernel
// counter line at each tenth, so that a log stays readable. Only ever writes
// to its stream: the artifacts are the same with or without it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdio>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

namespace nanoc {

class Progress {
 public:
  enum class Mode {
    Off,       // prints nothing (the default, and --no-progress)
    Terminal,  // one line, redrawn with '\r' and erased by finish()
    Log,       // one line per stage, counters at each tenth
  };

  // Terminal when `out` is a terminal (Log where TERM=dumb), else Off;
  // --progress (`forced` true) is Log where Off, --no-progress (false) Off.
  static Mode modeFor(std::FILE* out, std::optional<bool> forced);

  explicit Progress(Mode mode, std::FILE* out = stderr,
                    std::chrono::milliseconds delay = std::chrono::seconds(1));
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // A new stage ("import", "passes", "code generation", ...), with no count.
  void stage(const std::string& name);
  // `done` of `total` in the current stage ("code generation 37/120
  // kernels"; unit "%" shows a percentage instead); a name other than the
  // current stage's starts it.
  void count(const std::string& name, size_t done, size_t total, const char* unit);
  // Erases the status line and stops: before an error message or any other
  // output on the stream, and at the end. Idempotent; the destructor calls it.
  void finish();

 private:
  std::string lineLocked() const;
  void showLocked(bool stage_changed);
  void tick();

  const Mode mode_;
  std::FILE* const out_;
  const std::chrono::steady_clock::time_point start_;
  const std::chrono::milliseconds delay_;

  std::mutex mutex_;
  std::condition_variable wake_;
  bool finished_ = false;
  std::string stage_;
  size_t done_ = 0, total_ = 0;
  const char* unit_ = "";
  bool shown_ = false;         // Terminal: a status line is on screen
  bool stage_logged_ = false;  // Log: the current stage's line is printed
  size_t logged_tenth_ = 0;    // Log: the last counter tenth printed
  std::thread ticker_;         // redraws (Terminal), shows the first line late
};

}  // namespace nanoc
