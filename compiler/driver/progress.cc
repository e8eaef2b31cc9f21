#include "compiler/driver/progress.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace nanoc {

namespace {

// How often the terminal line is redrawn (its seconds count with it).
constexpr std::chrono::milliseconds kTick(100);

}  // namespace

Progress::Mode Progress::modeFor(std::FILE* out, std::optional<bool> forced) {
  bool terminal = isatty(fileno(out)) != 0;
  // A terminal that cannot erase a line (TERM=dumb) gets the log's lines.
  const char* term = std::getenv("TERM");
  bool erases = !(term && std::strcmp(term, "dumb") == 0);
  if (forced == false) return Mode::Off;
  if (terminal) return erases ? Mode::Terminal : Mode::Log;
  return forced == true ? Mode::Log : Mode::Off;
}

Progress::Progress(Mode mode, std::FILE* out, std::chrono::milliseconds delay)
    : mode_(mode), out_(out), start_(std::chrono::steady_clock::now()), delay_(delay) {
  if (mode_ != Mode::Off) ticker_ = std::thread([this] { tick(); });
}

Progress::~Progress() { finish(); }

void Progress::stage(const std::string& name) { count(name, 0, 0, ""); }

void Progress::count(const std::string& name, size_t done, size_t total, const char* unit) {
  if (mode_ == Mode::Off) return;
  std::lock_guard<std::mutex> lock(mutex_);
  bool changed = name != stage_;
  if (changed) {
    stage_ = name;
    stage_logged_ = false;
  }
  done_ = done;
  total_ = total;
  unit_ = unit;
  // The terminal's line waits for the ticker (a redraw per kernel would be
  // thousands a second); the log's lines are written as the stage changes.
  if (mode_ == Mode::Log) showLocked(changed);
}

void Progress::finish() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (finished_) return;
    finished_ = true;
    if (mode_ == Mode::Terminal && shown_) {
      std::fputs("\r\033[K", out_);
      std::fflush(out_);
      shown_ = false;
    }
  }
  wake_.notify_all();
  if (ticker_.joinable()) ticker_.join();
}

std::string Progress::lineLocked() const {
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  std::string line = "nanoc: " + stage_;
  if (total_ > 0 && std::strcmp(unit_, "%") == 0)
    line += " " + std::to_string(done_ * 100 / total_) + "%";
  else if (total_ > 0)
    line += " " + std::to_string(done_) + "/" + std::to_string(total_) + " " + unit_;
  char time[32];
  std::snprintf(time, sizeof time, " (%.1f s)", seconds);
  return line + time;
}

void Progress::showLocked(bool stage_changed) {
  if (finished_ || stage_.empty() || std::chrono::steady_clock::now() - start_ < delay_) return;
  if (mode_ == Mode::Terminal) {
    std::fprintf(out_, "\r%s\033[K", lineLocked().c_str());
    shown_ = true;
  } else {
    // One line as a stage starts (or when the delay ends within it), then
    // one at each tenth of its count: at most eleven a stage.
    size_t tenth = total_ > 0 ? done_ * 10 / total_ : 0;
    if (stage_changed || !stage_logged_) {
      stage_logged_ = true;
    } else if (tenth <= logged_tenth_) {
      return;
    }
    logged_tenth_ = tenth;
    std::fprintf(out_, "%s\n", lineLocked().c_str());
  }
  std::fflush(out_);
}

void Progress::tick() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!finished_) {
    wake_.wait_for(lock, kTick);
    showLocked(false);
  }
}

}  // namespace nanoc
