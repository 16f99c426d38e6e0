#include "module_runtime.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include "../host/errors.h"

namespace hcsp::gpu {

void* openVendorLibrary(const char* envVar, std::vector<std::string> names, std::string* name, std::string* tried) {
  const char* override = std::getenv(envVar);
  if (override && *override) names = {override};
  tried->clear();
  for (const auto& n : names) {
    if (void* h = dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      *name = n;
      return h;
    }
    *tried += (tried->empty() ? "" : ", ") + n;
  }
  return nullptr;
}

std::string gibText(size_t bytes) {
  std::ostringstream s;
  s.precision(1);
  s << std::fixed << static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0) << " GiB";
  return s.str();
}

void ModuleRuntime::runEmulated(const std::function<void()>&) { fail(ErrorKind::Runtime, "the " + kind() + " device runs kernels by name, not emulated"); }
void ModuleRuntime::runEmulatedBlocks(const char*, int64_t, int, const std::function<void()>&) {
  fail(ErrorKind::Runtime, "the " + kind() + " device runs kernels by name, not emulated");
}

std::vector<ModuleRuntime::CodeImage> ModuleRuntime::readCodeObjects(const std::string& root, const char* ext, const char* vendor) {
  namespace fs = std::filesystem;
  folder_ = (fs::path(root) / arch_).string();
  std::vector<fs::path> paths;
  std::error_code ec;
  if (fs::is_directory(folder_, ec)) {
    for (const auto& entry : fs::directory_iterator(folder_, ec)) {
      if (entry.is_regular_file(ec) && entry.path().extension() == std::string(".") + ext) paths.push_back(entry.path());
    }
  }
  std::sort(paths.begin(), paths.end());
  if (paths.empty()) {
    fail(ErrorKind::Unsupported, std::string("no ") + vendor + " code objects for " + arch_ + " in " + folder_ +
                                     " (build them with native/scripts/build-gpu-kernels.sh " + arch_ + ")");
  }
  std::vector<CodeImage> images;
  for (const auto& f : paths) {
    CodeImage o;
    o.file = f.filename().string();
    std::ifstream in(f, std::ios::binary);
    o.image.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    if (!in.good() && !in.eof()) fail(ErrorKind::Runtime, "cannot read the code object " + f.string());
    if (o.image.empty()) fail(ErrorKind::Runtime, "the code object " + f.string() + " is empty");
    files_.push_back(o.file);
    images.push_back(std::move(o));
  }
  return images;
}

void* ModuleRuntime::cachedFunction(const char* name, const std::function<void*()>& find) {
  std::lock_guard<std::mutex> lock(functionsMutex_);
  auto it = functions_.find(name);
  if (it != functions_.end()) return it->second;
  if (void* f = find()) {
    functions_.emplace(name, f);
    return f;
  }
  std::string files;
  for (const auto& f : files_) files += (files.empty() ? "" : ", ") + f;
  fail(ErrorKind::Runtime, std::string("kernel ") + name + " is in none of the code objects in " + folder_ + " (" + files +
                               "): rebuild them with native/scripts/build-gpu-kernels.sh " + arch_);
}

int64_t ModuleRuntime::launchBlocks(int64_t threads) const {
  const int64_t maxBlocks = static_cast<int64_t>(units_) * kBlocksPerUnit;
  return std::max<int64_t>(1, std::min<int64_t>((threads + kBlock - 1) / kBlock, maxBlocks));
}

void ModuleRuntime::keepReleaseError(const std::string& message) {
  std::lock_guard<std::mutex> lock(releaseMutex_);
  if (releaseError_.empty()) releaseError_ = message;
}

void ModuleRuntime::raiseReleaseError() {
  std::string deferred;
  {
    std::lock_guard<std::mutex> lock(releaseMutex_);
    deferred.swap(releaseError_);
  }
  if (!deferred.empty()) fail(ErrorKind::Runtime, deferred);
}

void ModuleRuntime::dropExtension() {
  std::lock_guard<std::mutex> lock(extensionMutex_);
  extension_.reset();
}

void* ModuleRuntime::allocateScratch(size_t bytes, const std::string& what) {
  reserve(static_cast<int64_t>(bytes), what);
  try {
    return rawAllocate(bytes);
  } catch (...) {
    unreserve(static_cast<int64_t>(bytes));
    throw;
  }
}

void ModuleRuntime::releaseScratch(void* p, size_t bytes) {
  if (p) rawRelease(p);
  unreserve(static_cast<int64_t>(bytes));
}

}  // namespace hcsp::gpu
