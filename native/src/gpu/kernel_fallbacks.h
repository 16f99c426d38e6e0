// The ops that ran their exact kernel on a device opened with fast kernels, and why (a shape
// past a fast kernel's shared tiles, a contract the fast kernel does not round as). Said once
// per (op, reason) on stderr, as the vendor GEMM's fallbacks are, and listed for --json: a user
// who asked for fast kernels learns where they did not get them.
#pragma once
#include <cstdio>
#include <string>
#include <vector>

namespace hcsp::gpu {

struct KernelFallback {
  std::string op;
  std::string reason;
};

class KernelFallbacks {
 public:
  void note(const std::string& op, const std::string& reason, const std::string& device) {
    for (const KernelFallback& f : list_)
      if (f.op == op && f.reason == reason) return;
    list_.push_back({op, reason});
    const std::string line = "hcsp: " + op + " runs its exact kernel on " + device + ": " + reason + "\n";
    std::fputs(line.c_str(), stderr);
    std::fflush(stderr);
  }
  const std::vector<KernelFallback>& list() const { return list_; }

 private:
  std::vector<KernelFallback> list_;
};

}  // namespace hcsp::gpu
