#include "weight_loader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <exception>
#include <mutex>
#include <unordered_map>

#include "../host/errors.h"
#include "staging.h"

namespace hcsp::loader {

namespace {

/** an open file, closed with it */
struct OpenFile {
  int fd = -1;
  uint64_t size = 0;
  OpenFile() = default;
  OpenFile(const OpenFile&) = delete;
  OpenFile& operator=(const OpenFile&) = delete;
  OpenFile(OpenFile&& o) noexcept : fd(o.fd), size(o.size) { o.fd = -1; }
  ~OpenFile() {
    if (fd >= 0) ::close(fd);
  }
};

/** part of one range, read in one chunk */
struct Piece {
  uint32_t file;
  uint64_t offset;
  uint64_t bytes;
  uint32_t part;
};

/** consecutive bytes of one tensor: read into one staging buffer, copied in one copy */
struct Chunk {
  uint32_t request;
  uint64_t dstOffset;
  uint64_t bytes;
  size_t firstPiece;
  size_t pieces;
};

std::string tensorText(const LoadRequest& r) { return "tensor '" + r.name + "'"; }

/** adjacent ranges of one file and part as one range */
std::vector<FileRange> merged(const std::vector<FileRange>& ranges) {
  std::vector<FileRange> out;
  for (const FileRange& r : ranges) {
    if (r.bytes == 0) continue;
    if (!out.empty() && out.back().file == r.file && out.back().part == r.part && out.back().offset + out.back().bytes == r.offset) {
      out.back().bytes += r.bytes;
    } else {
      out.push_back(r);
    }
  }
  return out;
}

OpenFile openChecked(const SourceFile& file, const std::string& reader) {
  const std::string& path = file.path;
  OpenFile f;
  // O_NONBLOCK: a fifo put in the file's place opens at once (fstat then refuses it)
  f.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (f.fd < 0) fail(ErrorKind::Runtime, path + ": cannot open: " + std::strerror(errno) + " (reading " + reader + ")");
  struct stat st;
  if (::fstat(f.fd, &st) != 0) fail(ErrorKind::Runtime, path + ": cannot stat: " + std::strerror(errno) + " (reading " + reader + ")");
  if (!S_ISREG(st.st_mode)) fail(ErrorKind::Runtime, path + ": not a regular file (reading " + reader + ")");
  const std::string identity = std::to_string(static_cast<uint64_t>(st.st_dev)) + ":" + std::to_string(static_cast<uint64_t>(st.st_ino));
  if (!file.identity.empty() && identity != file.identity) {
    fail(ErrorKind::Runtime, path + ": another file is at the path since the checkpoint was opened (reading " + reader + ")");
  }
  f.size = static_cast<uint64_t>(st.st_size);
  // the lanes read each file front to back, a chunk at a time
  ::posix_fadvise(f.fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  return f;
}

void readAll(const OpenFile& f, const std::string& path, const LoadRequest& r, uint8_t* dst, uint64_t bytes, uint64_t offset) {
  while (bytes > 0) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(bytes, uint64_t{1} << 30));
    const ssize_t got = ::pread(f.fd, dst, want, static_cast<off_t>(offset));
    if (got < 0) {
      if (errno == EINTR) continue;
      fail(ErrorKind::Runtime,
           path + ": read failed: " + std::strerror(errno) + " (" + tensorText(r) + ", " + std::to_string(want) + " bytes at " + std::to_string(offset) + ")");
    }
    if (got == 0) {
      fail(ErrorKind::Runtime,
           path + ": truncated file: " + tensorText(r) + " needs " + std::to_string(offset + bytes) + " bytes, the file ends at " + std::to_string(offset));
    }
    dst += got;
    offset += static_cast<uint64_t>(got);
    bytes -= static_cast<uint64_t>(got);
  }
}

}  // namespace

LoadResult loadWeights(const std::vector<SourceFile>& files, std::vector<LoadRequest> requests, const std::shared_ptr<Memory>& memory, ThreadPool& pool,
                       const LoadOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  // whole elements of every dtype in each chunk
  const size_t chunkBytes = std::max<size_t>(4096, options.chunkBytes / 4096 * 4096);
  LoadResult result;

  // the plan: ranges merged, checked against the tensors' sizes
  std::vector<std::string> firstReader(files.size());
  for (LoadRequest& r : requests) {
    r.ranges = merged(r.ranges);
    uint64_t total = 0;
    for (const FileRange& g : r.ranges) {
      if (g.file >= files.size())
        fail(ErrorKind::Attr, "loadWeights: " + tensorText(r) + " names file " + std::to_string(g.file) + " of " + std::to_string(files.size()));
      if (g.part >= r.parts)
        fail(ErrorKind::Attr, "loadWeights: " + tensorText(r) + " names part " + std::to_string(g.part) + " of " + std::to_string(r.parts));
      if (firstReader[g.file].empty()) firstReader[g.file] = tensorText(r);
      total += g.bytes;
    }
    const uint64_t want = static_cast<uint64_t>(numel(r.shape)) * dtypeBytes(r.dtype);
    if (total != want) {
      fail(ErrorKind::Size, "loadWeights: " + tensorText(r) + ": its ranges hold " + std::to_string(total) + " bytes, a " + dtypeName(r.dtype) +
                                shapeStr(r.shape) + " tensor has " + std::to_string(want));
    }
    result.ranges += r.ranges.size();
  }

  // every file open, and long enough, before anything is allocated
  std::vector<OpenFile> handles;
  handles.reserve(files.size());
  for (size_t f = 0; f < files.size(); f++) {
    if (firstReader[f].empty()) {
      handles.emplace_back();
      continue;
    }
    handles.push_back(openChecked(files[f], firstReader[f]));
  }
  for (const LoadRequest& r : requests) {
    for (const FileRange& g : r.ranges) {
      const uint64_t end = g.offset + g.bytes;
      if (end < g.offset || end > handles[g.file].size) {
        fail(ErrorKind::Runtime, files[g.file].path + ": truncated file: " + tensorText(r) + " needs " + std::to_string(end) + " bytes, the file has " +
                                     std::to_string(handles[g.file].size));
      }
    }
  }

  // chunks of at most chunkBytes, each within one tensor
  std::vector<Piece> pieces;
  std::vector<Chunk> chunks;
  for (uint32_t ri = 0; ri < requests.size(); ri++) {
    uint64_t dst = 0;
    Chunk cur{ri, 0, 0, pieces.size(), 0};
    for (const FileRange& g : requests[ri].ranges) {
      uint64_t done = 0;
      while (done < g.bytes) {
        const uint64_t take = std::min<uint64_t>(g.bytes - done, chunkBytes - cur.bytes);
        pieces.push_back(Piece{g.file, g.offset + done, take, g.part});
        cur.pieces++;
        cur.bytes += take;
        done += take;
        dst += take;
        if (cur.bytes == chunkBytes) {
          chunks.push_back(cur);
          cur = Chunk{ri, dst, 0, pieces.size(), 0};
        }
      }
    }
    if (cur.bytes > 0) chunks.push_back(cur);
  }
  result.chunks = chunks.size();

  // every tensor before the first read: out of memory fails before any work
  std::vector<TensorPtr> tensors;
  tensors.reserve(requests.size());
  auto releaseAll = [&] {
    // a failed load's bytes go back to the device, not to the pool: nothing stays allocated
    for (const TensorPtr& t : tensors) t->releaseData();
    tensors.clear();
  };
  try {
    for (const LoadRequest& r : requests) tensors.push_back(std::make_shared<Tensor>(r.dtype, r.shape, memory, Init::Uninitialized));
  } catch (...) {
    releaseAll();
    throw;
  }

  result.nonFinite.resize(requests.size());
  for (size_t i = 0; i < requests.size(); i++) result.nonFinite[i].resize(requests[i].parts);
  const bool direct = memory->hostVisible();
  result.staging = direct ? "none" : stagingKind(*memory);
  const int64_t want = options.lanes > 0 ? std::min(options.lanes, pool.size()) : pool.size();
  result.lanes = static_cast<int>(std::min<int64_t>(want, static_cast<int64_t>(chunks.size())));

  // staging no larger than the largest chunk: a small checkpoint does not fault in whole buffers
  uint64_t stagingBytes = 0;
  for (const Chunk& ch : chunks) stagingBytes = std::max(stagingBytes, ch.bytes);
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex mutex;
  std::exception_ptr error;
  auto lane = [&](int64_t, int64_t) {
    try {
      std::unique_ptr<Lane> staging = direct ? nullptr : openLane(*memory, static_cast<size_t>(stagingBytes));
      int buffer = 0;
      while (!failed.load(std::memory_order_relaxed)) {
        const size_t c = next.fetch_add(1);
        if (c >= chunks.size()) break;
        const Chunk& ch = chunks[c];
        const LoadRequest& r = requests[ch.request];
        uint8_t* target = static_cast<uint8_t*>(tensors[ch.request]->raw()) + ch.dstOffset;
        uint8_t* into = direct ? target : staging->buffer(buffer);
        uint64_t at = 0;
        for (size_t p = ch.firstPiece; p < ch.firstPiece + ch.pieces; p++) {
          const Piece& piece = pieces[p];
          readAll(handles[piece.file], files[piece.file].path, r, into + at, piece.bytes, piece.offset);
          const NonFinite found = countNonFinite(r.dtype, into + at, piece.bytes);
          if (found.nan || found.inf) {
            std::lock_guard<std::mutex> lock(mutex);
            result.nonFinite[ch.request][piece.part].nan += found.nan;
            result.nonFinite[ch.request][piece.part].inf += found.inf;
          }
          at += piece.bytes;
        }
        if (!direct) {
          staging->copy(target, buffer, ch.bytes);
          buffer ^= 1;
        }
      }
      if (staging) staging->finish();
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex);
      if (!error) error = std::current_exception();
      failed.store(true);
    }
  };
  if (result.lanes > 0)
    pool.parallelFor(result.lanes, 1, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; i++) lane(i, i + 1);
    });
  if (error) {
    releaseAll();
    std::rethrow_exception(error);
  }
  for (const LoadRequest& r : requests) {
    for (const FileRange& g : r.ranges) result.bytesRead += g.bytes;
  }
  result.tensors = std::move(tensors);
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace hcsp::loader
