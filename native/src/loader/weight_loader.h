// The native weight loader: a batch of weights, each a list of byte ranges of checkpoint files
// whose concatenation is the tensor's bytes (a rank's slice: one range for rows, one per row for
// a column slice), read with pread on the addon's thread pool and placed in device tensors, with
// each tensor's NaN and Inf counted on the way. Every file is opened and checked (a regular
// file, the one the caller opened at that path, long enough for every range) and every tensor
// allocated before the first read; lanes
// (one per pool thread) take chunks of a few MiB in file order, read them, count, and copy them
// to the device while reading the next (staging.h). An error (a file that cannot be read, a
// short read, out of memory) is one message naming the file and the tensor, and leaves nothing
// allocated. Conversions (FP8 dequantization, fp32 -> bf16) stay with the caller: the bytes
// land as they are stored, in the request's dtype, so an FP8 weight kept as FP8 is a plain
// request too.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "../host/tensor.h"
#include "../host/thread_pool.h"
#include "nonfinite_scan.h"

namespace hcsp::loader {

/** a file to read; `identity` ("device:inode", may be empty) is the file the caller opened and checked at that path */
struct SourceFile {
  std::string path;
  std::string identity;
};

/** `bytes` bytes of files[file] from `offset`, belonging to the request's part `part` */
struct FileRange {
  uint32_t file;
  uint64_t offset;
  uint64_t bytes;
  uint32_t part;
};

struct LoadRequest {
  /** the weight's name, for errors */
  std::string name;
  DType dtype;
  Shape shape;
  /** in the tensor's byte order; their bytes add up to the tensor's */
  std::vector<FileRange> ranges;
  /** the separately reported pieces (source reads) the ranges belong to: NaN/Inf are counted per part */
  uint32_t parts;
};

struct LoadOptions {
  /** bytes per read and copy at most (a lane's two staging buffers are as large as the largest chunk) */
  size_t chunkBytes = size_t{4} << 20;
  /** lanes at most (0: one per pool thread) */
  int lanes = 0;
};

struct LoadResult {
  std::vector<TensorPtr> tensors;
  /** per request, per part */
  std::vector<std::vector<NonFinite>> nonFinite;
  uint64_t bytesRead = 0;
  double seconds = 0;
  int lanes = 0;
  /** "none" (reads land in the host device's tensors), "pinned" or "pageable" */
  std::string staging;
  /** ranges after adjacent ones were merged, and chunks read */
  uint64_t ranges = 0;
  uint64_t chunks = 0;
};

/** the requests' tensors in `memory` (the host device's or a GPU's), read from `files` */
LoadResult loadWeights(const std::vector<SourceFile>& files, std::vector<LoadRequest> requests, const std::shared_ptr<Memory>& memory, ThreadPool& pool,
                       const LoadOptions& options = {});

}  // namespace hcsp::loader
