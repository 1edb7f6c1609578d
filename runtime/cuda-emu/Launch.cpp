//===- Launch.cpp - kernel launches of the CUDA emulator ------------------===//
//
// A launch runs its blocks one after another on the calling host thread.
// Within a block every CUDA thread is a fiber with its own stack (guard page
// below it): the scheduler runs each ready fiber until it finishes or waits
// at a rendezvous (__syncthreads, a warp shuffle), and releases a
// rendezvous once every thread it needs is there. A thread that finishes
// while others wait for it, or a shuffle whose lanes are not all present,
// is a kernel failure: on a GPU it would hang or read garbage.
//
// Fibers switch with a few instructions on x86-64 (the callee-saved
// registers and the stack pointer) and with ucontext elsewhere.
//
//===----------------------------------------------------------------------===//

#include "Emulator.h"

#include "tgc/cuda-emu/Device.h"

#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#if !defined(__x86_64__)
#include <ucontext.h>
#endif


namespace tgc::emu {
namespace {

//===----------------------------------------------------------------------===//
// Stacks and context switches
//===----------------------------------------------------------------------===//

constexpr size_t kStackBytes = size_t(256) << 10;

/// Fiber stacks, each above a guard page, reserved once per host thread and
/// reused by every block (pages never touched cost nothing).
class StackPool {
public:
  ~StackPool() {
    if (base)
      munmap(base, count * stride());
  }
  /// Stack `i` of at least `n` stacks: [begin, begin + kStackBytes).
  char *stack(size_t n, size_t i) {
    if (n > count) {
      if (base)
        munmap(base, count * stride());
      base = static_cast<char *>(mmap(nullptr, n * stride(),
                                      PROT_READ | PROT_WRITE,
                                      MAP_PRIVATE | MAP_ANONYMOUS |
                                          MAP_NORESERVE,
                                      -1, 0));
      if (base == MAP_FAILED) {
        base = nullptr;
        count = 0;
        return nullptr;
      }
      count = n;
      for (size_t s = 0; s < n; ++s)
        mprotect(base + s * stride(), pageBytes(), PROT_NONE);
    }
    return base + i * stride() + pageBytes();
  }

private:
  static size_t pageBytes() {
    static const size_t bytes = size_t(sysconf(_SC_PAGESIZE));
    return bytes;
  }
  static size_t stride() { return kStackBytes + pageBytes(); }
  char *base = nullptr;
  size_t count = 0;
};

#if defined(__x86_64__)

// Saves the callee-saved registers on the current stack, stores the stack
// pointer in *save, loads `load` and restores what it saved there.
extern "C" void tgcEmuSwitch(void **save, void *load);
asm(R"(
  .text
  .p2align 4
  .globl tgcEmuSwitch
  .type tgcEmuSwitch, @function
tgcEmuSwitch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size tgcEmuSwitch, .-tgcEmuSwitch
)");

struct Context {
  void *sp = nullptr;
  const void *stackBottom = nullptr; // for AddressSanitizer
  size_t stackBytes = 0;
  /// Makes a context that starts `entry` on [stack, stack + bytes).
  void prepare(char *stack, size_t bytes, void (*entry)()) {
    stackBottom = stack;
    stackBytes = bytes;
    auto top = reinterpret_cast<uintptr_t>(stack + bytes) & ~uintptr_t(15);
    auto *slots = reinterpret_cast<void **>(top);
    slots[-1] = nullptr;                         // entry's return address
    slots[-2] = reinterpret_cast<void *>(entry); // popped by `ret`
    for (int r = 3; r <= 8; ++r)                 // the six saved registers
      slots[-r] = nullptr;
    sp = &slots[-8];
  }
};
inline void rawSwitch(Context &from, Context &to) {
  tgcEmuSwitch(&from.sp, to.sp);
}

#else

struct Context {
  ucontext_t uc;
  const void *stackBottom = nullptr; // for AddressSanitizer
  size_t stackBytes = 0;
  void prepare(char *stack, size_t bytes, void (*entry)()) {
    stackBottom = stack;
    stackBytes = bytes;
    getcontext(&uc);
    uc.uc_stack.ss_sp = stack;
    uc.uc_stack.ss_size = bytes;
    uc.uc_link = nullptr;
    makecontext(&uc, entry, 0);
  }
};
inline void rawSwitch(Context &from, Context &to) {
  swapcontext(&from.uc, &to.uc);
}

#endif

// Under AddressSanitizer every switch says which stack comes next (and
// whether the one left is finished), so that ASan checks fiber stacks
// rather than reporting them as overflows of the thread's own.

/// Switches from `from` (finished for good when `fromDone`) to `to`.
inline void switchContext(Context &from, Context &to, bool fromDone = false) {
#ifdef TGC_EMU_ASAN
  void *fakeStack = nullptr;
  __sanitizer_start_switch_fiber(fromDone ? nullptr : &fakeStack,
                                 to.stackBottom, to.stackBytes);
  rawSwitch(from, to);
  // Back in `from`: note the bounds of the stack that switched here, which
  // the scheduler needs to switch back to it.
  const void *bottom = nullptr;
  size_t bytes = 0;
  __sanitizer_finish_switch_fiber(fakeStack, &bottom, &bytes);
#else
  (void)fromDone;
  rawSwitch(from, to);
#endif
}

/// What a fiber runs first: under AddressSanitizer, completes the switch
/// that started it and returns the bounds of the stack it came from.
inline void enterFiber(const void *&bottom, size_t &bytes) {
#ifdef TGC_EMU_ASAN
  __sanitizer_finish_switch_fiber(nullptr, &bottom, &bytes);
#else
  bottom = nullptr;
  bytes = 0;
#endif
}

//===----------------------------------------------------------------------===//
// Blocks
//===----------------------------------------------------------------------===//

struct Fiber {
  ThreadIndex index;
  Context context;
  bool done = false;
  unsigned linear = 0;   // thread index within the block
  unsigned shuffles = 0; // shuffles this thread has completed
};

/// One block's threads and the rendezvous state they share.
struct Block {
  std::vector<Fiber> fibers;
  /// Threads to run, in order; `head` is the next.
  std::vector<unsigned> ready;
  size_t head = 0;
  unsigned done = 0, atBarrier = 0;
  /// Lanes of each warp parked at its current shuffle.
  std::vector<unsigned> atShuffle;
  /// Shuffle values, double-buffered by shuffle parity: a lane cannot
  /// write slots[p] again before every lane has passed the shuffle in
  /// between, so no lane is still reading it.
  std::vector<uint64_t> slots[2];
  Context scheduler;
  const std::function<void()> *body = nullptr;
  std::string failure;
};

thread_local StackPool stacks;
#ifdef TGC_EMU_ASAN
thread_local bool stacksDirty = false;
#endif
thread_local Block *running = nullptr;
thread_local Fiber *current = nullptr;

/// The next thread to run, or null when none is ready.
Fiber *nextReady(Block &block) {
  if (block.head == block.ready.size())
    return nullptr;
  Fiber *next = &block.fibers[block.ready[block.head++]];
  if (block.head == block.ready.size()) {
    block.ready.clear();
    block.head = 0;
  }
  return next;
}

/// Leaves the calling thread for the next ready one (directly: a switch
/// through the scheduler would cost twice as much), or for the scheduler
/// when none is ready.
void yieldFrom(Fiber &self) {
  bool done = self.done;
  if (Fiber *next = nextReady(*running)) {
    if (next == &self)
      return;
    current = next;
    switchContext(self.context, next->context, done);
  } else {
    switchContext(self.context, running->scheduler, done);
  }
  current = &self;
}

[[noreturn]] void fiberMain() {
  const void *bottom;
  size_t bytes;
  enterFiber(bottom, bytes);
  (*running->body)();
  Fiber &self = *current;
  self.done = true;
  ++running->done;
  yieldFrom(self);
  __builtin_unreachable();
}

/// Parks the calling thread until a rendezvous releases it.
void park() { yieldFrom(*current); }

void makeReady(Block &block, unsigned linear) {
  block.ready.push_back(linear);
}

/// Fails the block from inside a thread: the thread stops here.
[[noreturn]] void failFromThread(std::string message) {
  if (running->failure.empty())
    running->failure = std::move(message);
  current->done = true;
  ++running->done;
  switchContext(current->context, running->scheduler, /*fromDone=*/true);
  __builtin_unreachable();
}

/// Threads in warp `w` of a block of `n` threads.
unsigned warpLanes(unsigned n, unsigned w) {
  return std::min(32u, n - w * 32);
}

/// Why the threads left parked cannot go on.
std::string deadlock(const Block &block) {
  unsigned n = unsigned(block.fibers.size());
  for (unsigned w = 0; w < block.atShuffle.size(); ++w)
    if (block.atShuffle[w] != 0)
      return "a warp shuffle that not every lane of warp " +
             std::to_string(w) + " reached (" +
             std::to_string(block.atShuffle[w]) + " of " +
             std::to_string(warpLanes(n, w)) + ")";
  return "__syncthreads reached by " + std::to_string(block.atBarrier) +
         " of " + std::to_string(n) + " threads (the others had returned)";
}

/// Runs the block to completion; false (with block.failure set) when it
/// cannot finish.
bool runBlock(Block &block) {
  unsigned n = unsigned(block.fibers.size());
#ifdef TGC_EMU_ASAN
  // The scheduler runs on the host thread's own stack (looked up once:
  // for the main thread glibc reads /proc/self/maps).
  thread_local void *stackAddress = nullptr;
  thread_local size_t stackBytes = 0;
  pthread_attr_t attributes;
  if (!stackAddress && pthread_getattr_np(pthread_self(), &attributes) == 0) {
    pthread_attr_getstack(&attributes, &stackAddress, &stackBytes);
    pthread_attr_destroy(&attributes);
  }
  block.scheduler.stackBottom = stackAddress;
  block.scheduler.stackBytes = stackBytes;
#endif
  block.ready.clear();
  block.head = 0;
  block.done = block.atBarrier = 0;
  block.atShuffle.assign((n + 31) / 32, 0);
  for (auto &slots : block.slots)
    slots.resize(n);
  for (unsigned t = 0; t < n; ++t)
    block.ready.push_back(t);
  // Threads switch among themselves; control comes back here when none
  // is ready or one failed.
  while (Fiber *fiber = nextReady(block)) {
    current = fiber;
    switchContext(block.scheduler, fiber->context);
    current = nullptr;
    if (!block.failure.empty())
      return false;
  }
  if (block.done == n)
    return true;
  block.failure = deadlock(block);
  return false;
}

std::string dimsText(dim3 d) {
  return "(" + std::to_string(d.x) + ", " + std::to_string(d.y) + ", " +
         std::to_string(d.z) + ")";
}

} // namespace

//===----------------------------------------------------------------------===//
// Device-side entry points
//===----------------------------------------------------------------------===//

const ThreadIndex &thisThread() {
  if (!current) {
    std::fprintf(stderr, "tgc CUDA emulator: a built-in index variable was "
                         "read outside a kernel\n");
    std::abort();
  }
  return current->index;
}

void syncThreads() {
  Block &block = *running;
  unsigned n = unsigned(block.fibers.size());
  if (++block.atBarrier < n) {
    park();
    return;
  }
  // The last to arrive releases the others and goes on.
  block.atBarrier = 0;
  for (unsigned t = 0; t < n; ++t)
    if (t != current->linear)
      makeReady(block, t);
}

uint64_t shuffleXor(unsigned mask, uint64_t bits, int laneMask, int width) {
  Block &block = *running;
  unsigned n = unsigned(block.fibers.size());
  unsigned linear = current->linear, warp = linear / 32, lane = linear % 32;
  unsigned lanes = warpLanes(n, warp);
  unsigned expected = lanes == 32 ? 0xffffffffu : (1u << lanes) - 1;
  if ((mask & expected) != expected)
    failFromThread("a warp shuffle whose mask leaves out lanes that run it "
                   "(only full-warp shuffles are emulated)");
  if (width <= 0 || width > 32 || (width & (width - 1)))
    failFromThread("a warp shuffle of width " + std::to_string(width));
  std::vector<uint64_t> &slots = block.slots[current->shuffles++ & 1];
  slots[linear] = bits;
  if (++block.atShuffle[warp] < lanes) {
    park();
  } else {
    block.atShuffle[warp] = 0;
    for (unsigned l = 0; l < lanes; ++l)
      if (warp * 32 + l != linear)
        makeReady(block, warp * 32 + l);
  }
  unsigned segment = lane & ~unsigned(width - 1);
  unsigned source = segment + ((lane - segment) ^ unsigned(laneMask));
  return source < lanes && source < segment + unsigned(width)
             ? slots[warp * 32 + source]
             : bits;
}

void launchGrid(const char *kernel, dim3 grid, dim3 block, size_t sharedBytes,
                cudaStream_t stream, std::function<void()> body,
                std::function<int()> findBadArgument) {
  uint64_t threads = uint64_t(block.x) * block.y * block.z;
  if (threads == 0 || threads > 1024 || block.z > 64 || grid.x == 0 ||
      grid.y == 0 || grid.z == 0 || grid.y > 65535 || grid.z > 65535 ||
      grid.x > 0x7fffffffu || sharedBytes > 48 * 1024) {
    raiseLaunchError(cudaErrorInvalidConfiguration,
                     std::string(kernel) + " launched with grid " +
                         dimsText(grid) + " and block " + dimsText(block));
    return;
  }
  if (!enqueue(stream, [=] {
        if (stickyError() != cudaSuccess)
          return; // a failed context runs nothing more
        if (int bad = findBadArgument(); bad >= 0) {
          raiseKernelError(cudaErrorIllegalAddress,
                           std::string(kernel) + ": argument " +
                               std::to_string(bad + 1) +
                               " is a pointer to memory that is not device "
                               "memory");
          return;
        }
        runGrid(kernel, grid, block, body);
      }))
    raiseLaunchError(cudaErrorInvalidResourceHandle,
                     std::string(kernel) + " launched on a stream that is "
                                           "not live");
}

void runGrid(const char *kernel, dim3 grid, dim3 block,
             const std::function<void()> &body) {
  uint64_t threads = uint64_t(block.x) * block.y * block.z;
  Block state;
  state.body = &body;
  state.fibers.resize(threads);
  Block *outer = running;
  running = &state;
  for (unsigned z = 0; z < grid.z; ++z)
    for (unsigned y = 0; y < grid.y; ++y)
      for (unsigned x = 0; x < grid.x; ++x) {
        unsigned linear = 0;
        for (unsigned tz = 0; tz < block.z; ++tz)
          for (unsigned ty = 0; ty < block.y; ++ty)
            for (unsigned tx = 0; tx < block.x; ++tx, ++linear) {
              Fiber &fiber = state.fibers[linear];
              fiber.index = {{tx, ty, tz}, {x, y, z}, block, grid};
              fiber.done = false;
              fiber.linear = linear;
              fiber.shuffles = 0;
              char *stack = stacks.stack(threads, linear);
              if (!stack) {
                running = outer;
                raiseKernelError(cudaErrorMemoryAllocation,
                                 "no memory for the emulator's fiber stacks");
                return;
              }
              // Stack tops a page apart would share cache sets: offset
              // each by a different number of cache lines.
              size_t color = (linear * 3 % 61) * 64;
#ifdef TGC_EMU_ASAN
              // The frames a finished thread never returned from stay
              // poisoned: at the top of its stack, or anywhere in it after a
              // failed block.
              size_t dirty = stacksDirty ? kStackBytes : size_t(16) << 10;
              __asan_unpoison_memory_region(stack + kStackBytes - dirty,
                                            dirty);
#endif
              fiber.context.prepare(stack, kStackBytes - color, fiberMain);
            }
#ifdef TGC_EMU_ASAN
        stacksDirty = false;
#endif
        if (!runBlock(state)) {
#ifdef TGC_EMU_ASAN
          stacksDirty = true;
#endif
          running = outer;
          raiseKernelError(cudaErrorLaunchFailure,
                           std::string(kernel) + ", block " +
                               dimsText(dim3(x, y, z)) + ": " + state.failure);
          return;
        }
      }
  running = outer;
}

} // namespace tgc::emu
