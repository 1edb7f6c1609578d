//===- Verify.cpp - checking instructions against their kernels -----------===//
//
// The runtime's own check of every instruction of a .tgx file, before any
// runs, because the file may not come from tgc-compile: first what the ODS
// says of every op (kernelSpec, generated from TGOps.td: operand and result
// counts, each attribute known and of its kind, the required ones present),
// then each kernel's element types, the shape relations it relies on to
// stay inside its buffers, and the values of the attributes it reads. A
// kernel trusts what passed here.
//
//===----------------------------------------------------------------------===//

#include "Verify.h"

#include "../Safetensors.h"
#include "KernelAttrs.h"
#include "tgc/Support/CheckedMath.h"
#include "tgc/Support/ShapeRules.h"
#include "tgc/runtime/CpuKernels.h"
#include "tgc/runtime/Quant4bit.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace tgc::rt {
namespace {

using Shape = std::vector<int64_t>;

class Checker {
public:
  Checker(const Program &program, const Instruction &inst)
      : program(program), inst(inst) {}

  Status run();

private:
  const TensorInfo &in(size_t i) { return program.tensors[inst.operands[i]]; }
  const TensorInfo &out(size_t i) { return program.tensors[inst.results[i]]; }
  /// Result `i` like `t`, or not computed.
  bool outLike(const TensorInfo &t, size_t i) {
    return inst.results[i] == kNotComputed || same(t, out(i));
  }

  bool fail(const std::string &message) {
    if (error.empty())
      error = message;
    return false;
  }
  bool counts(size_t operands, size_t results) {
    if (inst.operands.size() != operands || inst.results.size() != results)
      return fail("expects " + std::to_string(operands) + " operands and " +
                  std::to_string(results) + " results, found " +
                  std::to_string(inst.operands.size()) + " and " +
                  std::to_string(inst.results.size()));
    return true;
  }
  bool variadic(size_t minOperands, size_t results) {
    if (inst.operands.size() < minOperands || inst.results.size() != results)
      return fail("wrong number of operands or results");
    return true;
  }
  bool floatT(const TensorInfo &t) {
    return isFloat(t.dtype) || fail("'" + t.name + "' must be a float tensor");
  }
  bool indexT(const TensorInfo &t) {
    return t.dtype == DType::I32 || t.dtype == DType::I64 ||
           fail("'" + t.name + "' must be an i32 or i64 tensor");
  }
  bool scalar(const TensorInfo &t, DType dtype) {
    return (t.shape.empty() && t.dtype == dtype) ||
           fail("'" + t.name + "' must be a " + dtypeName(dtype) + " scalar");
  }
  bool sameDType(const TensorInfo &a, const TensorInfo &b) {
    return a.dtype == b.dtype ||
           fail("'" + a.name + "' and '" + b.name + "' differ in type");
  }
  bool shapeIs(const TensorInfo &t, const Shape &shape) {
    return t.shape == shape || fail("'" + t.name + "' has the wrong shape");
  }
  bool same(const TensorInfo &a, const TensorInfo &b) {
    return (sameDType(a, b) && shapeIs(a, b.shape));
  }
  static std::string countRange(int min, int max) {
    if (min == max)
      return std::to_string(min);
    return max < 0 ? "at least " + std::to_string(min)
                   : std::to_string(min) + " to " + std::to_string(max);
  }
  static const char *kindName(AttrValue::Kind kind) {
    switch (kind) {
    case AttrValue::Int:
      return "an integer";
    case AttrValue::Float:
      return "a float";
    case AttrValue::Bool:
      return "a bool";
    case AttrValue::Ints:
      return "an integer list";
    }
    return "?";
  }
  /// What the op's ODS says (kernelSpec): operand and result counts in
  /// range, every attribute one of the op's and of its kind, the required
  /// ones present. A constant's attributes are the writer's (its blob),
  /// checked by its case.
  bool spec() {
    KernelSpec spec = kernelSpec(inst.kernel);
    auto inRange = [](size_t n, int min, int max) {
      return n >= size_t(min) && (max < 0 || n <= size_t(max));
    };
    if (!inRange(inst.operands.size(), spec.minOperands, spec.maxOperands) ||
        !inRange(inst.results.size(), spec.minResults, spec.maxResults))
      return fail("expects " + countRange(spec.minOperands, spec.maxOperands) +
                  " operands and " +
                  countRange(spec.minResults, spec.maxResults) +
                  " results, found " + std::to_string(inst.operands.size()) +
                  " and " + std::to_string(inst.results.size()));
    const AttrSpec *begin = spec.attrs, *end = spec.attrs + spec.numAttrs;
    for (const auto &[name, value] : inst.attrs) {
      const AttrSpec *known = std::find_if(
          begin, end, [&](const AttrSpec &a) { return name == a.name; });
      if (known == end && inst.kernel != Kernel::Constant)
        return fail("unknown attribute '" + name + "'");
      if (known != end && value.kind != known->kind)
        return fail("attribute '" + name + "' must be " +
                    kindName(known->kind));
    }
    for (const AttrSpec *a = begin; a != end; ++a)
      if (a->required && !inst.hasAttr(a->name))
        return fail(std::string("missing attribute '") + a->name + "'");
    return true;
  }
  /// An attribute the ODS leaves optional that this file must have.
  bool has(const char *name) {
    return inst.hasAttr(name) ||
           fail(std::string("missing attribute '") + name + "'");
  }
  /// An optimizer update's optional stochastic rounding: an integer seed,
  /// non-zero only on a bf16 parameter.
  bool roundingSeed() {
    if (!inst.hasAttr("rounding_seed"))
      return true;
    return inst.getInt("rounding_seed") == 0 || in(0).dtype == DType::BF16 ||
           fail("rounding_seed rounds bf16 parameters stochastically; '" +
                in(0).name + "' is " + dtypeName(in(0).dtype));
  }
  /// An AdamW update with `fixed` operands and `results` results, then
  /// optionally a part number (an i64 scalar, for stochastic rounding
  /// only) and an apply predicate (an i1 scalar), told apart by type.
  bool adamwOperands(size_t fixed, size_t results) {
    size_t n = inst.operands.size();
    if (n < fixed || n > fixed + 2 || inst.results.size() != results)
      return fail("expects " + std::to_string(fixed) + " operands, an " +
                  "optional part number and an optional predicate, and " +
                  std::to_string(results) + " results");
    size_t next = fixed;
    if (next < n && in(next).dtype == DType::I64) {
      if (!scalar(in(next), DType::I64))
        return false;
      if (!inst.hasAttr("rounding_seed") || inst.getInt("rounding_seed") == 0)
        return fail("a part number ('" + in(next).name +
                    "') is read by stochastic rounding only; rounding_seed "
                    "is 0");
      ++next;
    }
    if (next < n && !scalar(in(next++), DType::I1))
      return false;
    return next == n || fail("operand #" + std::to_string(next) +
                             " is neither a part number nor a predicate");
  }
  bool axisOk(int64_t axis, size_t rank) {
    return (axis >= -int64_t(rank) && axis < int64_t(rank)) ||
           fail("axis out of range");
  }
  static bool broadcast(const Shape &a, const Shape &b, Shape &result) {
    std::optional<Shape> shape = shapes::broadcast(a, b);
    if (shape)
      result = std::move(*shape);
    return shape.has_value();
  }
  bool broadcastsTo(const Shape &from, const Shape &to) {
    Shape shape;
    return (broadcast(from, to, shape) && shape == to) ||
           fail("shapes do not broadcast");
  }
  /// `t` stored as `computed`'s type or in 16 bits beside an f32
  /// computation (tgc/Support/Precision.h), with `computed`'s shape.
  bool storedAs(const TensorInfo &t, const TensorInfo &computed) {
    return (mixesInto(t.dtype, computed.dtype) ||
            fail("'" + t.name + "' must have the type of '" + computed.name +
                 "', or f16 or bf16 where that is f32")) &&
           shapeIs(t, computed.shape);
  }
  bool elementwiseBinary() {
    if (!counts(2, 1))
      return false;
    // One float operand may be 16-bit beside an f32 operand and result.
    bool mixed = mixedOperands(in(0).dtype, in(1).dtype, out(0).dtype);
    if (!mixed && (!sameDType(in(0), in(1)) || !sameDType(in(0), out(0))))
      return false;
    if (in(0).dtype == DType::I1 || in(0).dtype == DType::I8)
      return fail("arithmetic on i1 or i8");
    Shape shape;
    if (!broadcast(in(0).shape, in(1).shape, shape) || shape != out(0).shape)
      return fail("operand shapes do not broadcast to the result");
    return true;
  }
  bool unary() { return counts(1, 1) && floatT(in(0)) && same(in(0), out(0)); }
  /// An activation's gradient: (operand or result, incoming gradient).
  bool activationGrad() {
    return counts(2, 1) && floatT(in(0)) && same(in(0), in(1)) &&
           same(in(0), out(0));
  }
  bool reduction(const TensorInfo &input, const TensorInfo &result) {
    std::vector<int64_t> axes = inst.getInts("axes");
    bool keep = inst.getBool("keep_dims");
    Shape shape;
    for (size_t i = 0; i < axes.size(); ++i)
      if (axes[i] < 0 || axes[i] >= int64_t(input.shape.size()) ||
          (i && axes[i - 1] >= axes[i]))
        return fail("invalid reduction axes");
    for (size_t d = 0; d < input.shape.size(); ++d) {
      bool reduced = std::count(axes.begin(), axes.end(), int64_t(d));
      if (!reduced)
        shape.push_back(input.shape[d]);
      else if (keep)
        shape.push_back(1);
    }
    return sameDType(input, result) && shapeIs(result, shape);
  }
  bool box(const Shape &full, const Shape &part) {
    std::vector<int64_t> offsets = inst.getInts("offsets");
    if (offsets.size() != full.size() || part.size() != full.size())
      return fail("offsets, box and shape ranks differ");
    for (size_t d = 0; d < full.size(); ++d)
      if (offsets[d] < 0 || offsets[d] > full[d] - part[d])
        return fail("the box does not fit");
    return true;
  }
  bool pieces(const std::vector<const TensorInfo *> &parts,
              const TensorInfo &whole) {
    if (!axisOk(inst.getInt("axis"), whole.shape.size()))
      return false;
    int64_t axis = inst.getInt("axis");
    if (axis < 0)
      axis += whole.shape.size();
    int64_t total = 0;
    for (const TensorInfo *part : parts) {
      if (!sameDType(*part, whole) || part->shape.size() != whole.shape.size())
        return fail("pieces do not match the whole");
      for (size_t d = 0; d < whole.shape.size(); ++d)
        if (int64_t(d) != axis && part->shape[d] != whole.shape[d])
          return fail("pieces do not match the whole");
      total += part->shape[axis];
    }
    return total == whole.shape[axis] || fail("pieces do not add up");
  }
  /// tg.matmul (`withAddend` false) and tg.matmul_add: operands and
  /// result of one float type, the result (and addend) of the product's
  /// shape.
  bool product(bool withAddend) {
    if (!counts(withAddend ? 3 : 2, 1) || !floatT(in(0)) ||
        !sameDType(in(0), in(1)) || !sameDType(in(0), out(0)) ||
        (withAddend && !sameDType(in(0), in(2))))
      return false;
    shapes::ShapeOrError expected =
        shapes::matmul(in(0).shape, in(1).shape, inst.getBool("transpose_lhs"),
                       inst.getBool("transpose_rhs"));
    if (!expected.ok())
      return fail((withAddend ? "matmul_add " : "matmul ") + expected.error);
    return (!withAddend || shapeIs(in(2), expected.shape)) &&
           shapeIs(out(0), expected.shape);
  }
  /// tg.matmul_4bit: the input and result of one float type and the
  /// product's shapes; the weight's codes, absmax (f32, or ui8 with the
  /// three nested operands) and maps of its layout.
  bool weight4bit() {
    size_t n = inst.operands.size();
    auto a = Matmul4bitAttrs::read(inst);
    if (!((n == 4 && counts(4, 1)) || (n == 7 && counts(7, 1)) ||
          fail("expects 4 operands, or 7 with a double-quantized absmax")) ||
        !floatT(in(0)) || !sameDType(in(0), out(0)))
      return false;
    shapes::ShapeOrError expected =
        shapes::matmul4bit(in(0).shape, a.rows, a.cols, a.transposeRhs);
    if (!expected.ok())
      return fail("matmul_4bit " + expected.error);
    if (a.blockSize <= 0 || a.blockSize % 2 ||
        a.blockSize > quant4::kMaxBlockSize)
      return fail("block_size must be even and in [2, " +
                  std::to_string(quant4::kMaxBlockSize) + "], found " +
                  std::to_string(a.blockSize));
    if (a.rows > kMaxTensorBytes / a.cols)
      return fail("the weight has too many elements");
    quant4::Layout layout{a.rows * a.cols, a.blockSize};
    bool nested = n == 7;
    auto dtypeIs = [&](const TensorInfo &t, DType dtype, const char *what) {
      return t.dtype == dtype ||
             fail(std::string(what) + " '" + t.name + "' must be " +
                  dtypeName(dtype) + ", found " + dtypeName(t.dtype));
    };
    return shapeIs(out(0), expected.shape) &&
           dtypeIs(in(1), DType::U8, "codes") &&
           shapeIs(in(1), {layout.codeBytes()}) &&
           dtypeIs(in(2), nested ? DType::U8 : DType::F32,
                   nested ? "a double-quantized absmax"
                          : "absmax (without nested operands)") &&
           shapeIs(in(2), {layout.blocks()}) &&
           quantMap(in(3), quant4::kValues) &&
           (!nested ||
            (dtypeIs(in(4), DType::F32, "nested_absmax") &&
             shapeIs(in(4), {layout.nestedBlocks()}) &&
             quantMap(in(5), quant4::kNestedValues) &&
             scalar(in(6), DType::F32)));
  }
  bool linear() {
    bool gelu = inst.getBool("gelu");
    if (!counts(3, gelu ? 2 : 1) || !floatT(in(0)) || !sameDType(in(0), in(1)) ||
        !floatT(out(0)) || !sameDType(in(2), out(0)))
      return false;
    if (out(0).dtype != in(0).dtype && out(0).dtype != DType::F32)
      return fail("a linear result is in its operands' type or f32");
    const Shape &x = in(0).shape, &w = in(1).shape;
    if (x.size() < 2 || w.size() != 2 || x.back() != w[0])
      return fail("linear shapes do not agree");
    Shape expected(x.begin(), x.end() - 1);
    expected.push_back(w[1]);
    return shapeIs(in(2), {w[1]}) && shapeIs(out(0), expected) &&
           (!gelu || same(out(1), out(0)));
  }
  /// tg.matmul_bias_grad (operands lhs, rhs) and tg.matmul_gelu_grad
  /// (grad, weight, preactivation): one float type throughout, the shapes
  /// of ShapeRules.h.
  bool biasGradProduct(bool gelu) {
    if (!counts(gelu ? 3 : 2, 2) || !floatT(in(0)) ||
        !sameDType(in(0), in(1)) || (gelu && !sameDType(in(0), in(2))) ||
        !sameDType(in(0), out(0)) || !sameDType(in(0), out(1)))
      return false;
    shapes::BiasGradShapes expected =
        gelu ? shapes::matmulGeluGrad(in(0).shape, in(1).shape, in(2).shape,
                                      inst.getBool("transpose_rhs"))
             : shapes::matmulBiasGrad(in(0).shape, in(1).shape,
                                      inst.getBool("bias_of_lhs"));
    if (!expected.ok())
      return fail((gelu ? "matmul_gelu_grad " : "matmul_bias_grad ") +
                  expected.error);
    return shapeIs(out(0), expected.product) && shapeIs(out(1), expected.bias);
  }
  /// A norm's input and its optional addend (operand `addendAt`) and sum
  /// (result 1), as a tg.add of the two would have them; `normalized` is
  /// set to the tensor the norm normalizes (the input, or the sum).
  bool normInput(size_t operands, const TensorInfo *&normalized) {
    normalized = nullptr;
    if (inst.operands.size() == operands) {
      if (!counts(operands, 1))
        return false;
      normalized = &in(0);
      return true;
    }
    if (!counts(operands + 1, 2))
      return false;
    const TensorInfo &x = in(0), &addend = in(operands), &sum = out(1);
    bool mixed = mixedOperands(x.dtype, addend.dtype, sum.dtype);
    if (!floatT(x) || (!mixed && (!sameDType(x, addend) || !sameDType(x, sum))))
      return false;
    if (!shapeIs(addend, x.shape) || !shapeIs(sum, x.shape))
      return false;
    normalized = &sum;
    return true;
  }
  /// A norm gradient's result `i`: its computed f32 input gradient (result
  /// 0) stored again in f16 or bf16.
  bool roundedInputGrad(size_t i) {
    if (inst.results[i] == kNotComputed)
      return true;
    if (inst.results[0] == kNotComputed || out(0).dtype != DType::F32 ||
        (out(i).dtype != DType::F16 && out(i).dtype != DType::BF16))
      return fail("rounded_input_grad must be an f32 input_grad's shape in "
                  "f16 or bf16");
    return shapeIs(out(i), out(0).shape);
  }
  bool layerNorm(const TensorInfo &x, const TensorInfo &w) {
    if (!floatT(x) || x.shape.empty() || !sameDType(x, w) ||
        !shapeIs(w, {x.shape.back()}))
      return false;
    return true;
  }
  /// An attention operand's shape as the rules read it, [B..., T, D]: with
  /// the bshd layout, its T and H swapped.
  Shape attentionView(const TensorInfo &t) {
    return shapes::attentionView(t.shape, inst.getBool("bshd"));
  }
  /// The query, key and value of an attention with result (or output)
  /// `o`: operands 0, 1 and 2, or with `packed` the heads of the one
  /// operand they are.
  bool heads(const TensorInfo &o, TensorInfo &q, TensorInfo &k, TensorInfo &v) {
    q = in(0);
    k = in(1);
    v = in(2);
    if (!inst.getBool("packed"))
      return true;
    if (!inst.getBool("bshd"))
      return fail("packed attention needs bshd");
    if (inst.operands[1] != inst.operands[0] ||
        inst.operands[2] != inst.operands[0])
      return fail("packed query, key and value must be one tensor");
    if (o.shape.size() != 4 ||
        !shapes::packedHeads(in(0).shape, o.shape[2], q.shape, k.shape))
      return fail("packed heads must be [B, T, Hq + 2 Hkv, D] with Hq the "
                  "output's heads");
    v.shape = k.shape;
    return true;
  }
  /// `hasMask`: whether a key mask (or segment ids) is an operand.
  bool attention(const TensorInfo &q, const TensorInfo &k, const TensorInfo &v,
                 const TensorInfo &o, bool hasMask) {
    if (!floatT(q) || !sameDType(q, k) || !sameDType(q, v) ||
        !sameDType(q, o) || !has("scale"))
      return false;
    double scale = inst.getFloat("scale");
    if (!(scale > 0.0 && std::isfinite(scale)))
      return fail("the attention scale must be positive and finite");
    bool bshd = inst.getBool("bshd");
    Shape qs = attentionView(q), ks = attentionView(k), vs = attentionView(v);
    size_t r = qs.size();
    if (r < 2 || ks.size() != r || vs.size() != r || (bshd && r != 4))
      return fail(bshd ? "bshd attention needs operands of rank 4"
                       : "attention ranks differ");
    Shape qBatch(qs.begin(), qs.end() - 2), kBatch(ks.begin(), ks.end() - 2);
    if (shapes::attentionGroup(qBatch, kBatch) == 0 ||
        !std::equal(ks.begin(), ks.end() - 2, vs.begin()) ||
        qs[r - 1] != ks[r - 1] || ks[r - 2] != vs[r - 2])
      return fail("attention shapes do not agree");
    if (inst.getBool("causal") && qs[r - 2] != ks[r - 2])
      return fail("causal attention needs equal lengths");
    int64_t window = inst.getInt("window", 0);
    if (window < 0 || (window > 0 && !inst.getBool("causal")))
      return fail("an attention window must be 0 or positive with causal");
    if (inst.getBool("segments") && !hasMask)
      return fail("segmented attention needs its segment ids");
    if (inst.getBool("segments") && qs[r - 2] != ks[r - 2])
      return fail("segmented attention needs equal lengths");
    if (!softcap())
      return false;
    Shape shape(qs.begin(), qs.end() - 1);
    shape.push_back(vs.back());
    return shapeIs(o, shapes::attentionView(shape, bshd));
  }
  /// An optional soft-cap (attention's scores, the cross-entropy's
  /// logits): a positive finite float.
  bool softcap() {
    if (!inst.hasAttr("softcap"))
      return true;
    return ((inst.getFloat("softcap") > 0.0 &&
             std::isfinite(inst.getFloat("softcap"))) ||
            fail("a softcap must be positive and finite"));
  }
  /// An attention's row log-sum-exp: f32, the query's shape without its
  /// last dimension.
  bool rowLse(const TensorInfo &q, const TensorInfo &lse) {
    return (lse.dtype == DType::F32 || fail("'" + lse.name + "' must be f32")) &&
           !q.shape.empty() &&
           shapeIs(lse, Shape(q.shape.begin(), q.shape.end() - 1));
  }
  /// A key mask [P..., Tk]: P... a prefix of the query's batch dimensions.
  bool keyMask(const TensorInfo &q, const TensorInfo &k,
               const TensorInfo &m) {
    if (!indexT(m))
      return false;
    Shape qs = attentionView(q), ks = attentionView(k);
    size_t r = qs.size();
    if (r < 2 || ks.size() != r || m.shape.empty() ||
        m.shape.size() - 1 > r - 2 ||
        !std::equal(m.shape.begin(), m.shape.end() - 1, qs.begin()) ||
        m.shape.back() != ks[r - 2])
      return fail("the key mask's dimensions are not a prefix of the batch "
                  "dimensions and the key length");
    return true;
  }
  bool targets(const TensorInfo &logits, const TensorInfo &t) {
    if (!floatT(logits) || !indexT(t) || logits.shape.empty())
      return false;
    return shapeIs(t, Shape(logits.shape.begin(), logits.shape.end() - 1));
  }

  /// The block size of an 8-bit update: a power of two up to 4096.
  bool blockSize(int64_t &size) {
    size = inst.kernel == Kernel::SGD8bitUpdate
               ? SGD8bitUpdateAttrs::read(inst).blockSize
           : inst.kernel == Kernel::AdamW4bitUpdate
               ? AdamW4bitUpdateAttrs::read(inst).blockSize
               : AdamW8bitUpdateAttrs::read(inst).blockSize;
    // The CUDA kernels hold a block in registers (cpu::kMaxQuantBlock).
    return (size >= 1 && size <= cpu::kMaxQuantBlock &&
            (size & (size - 1)) == 0) ||
           fail("block_size must be a power of two in [1, 4096]");
  }
  /// ui8 codes of the parameter's shape and one f32 absmax per block.
  /// With `packed`, 4-bit codes two a byte: ui8 [ceil(n / 2)], an even
  /// block size.
  bool quantizedState(const TensorInfo &param, const TensorInfo &codes,
                      const TensorInfo &absmax, bool packed = false) {
    int64_t size;
    if (!blockSize(size))
      return false;
    if (packed && size < 2)
      return fail("block_size of 4-bit state must be even");
    if (codes.dtype != DType::U8)
      return fail("'" + codes.name + "' must be a ui8 tensor");
    int64_t blocks = (param.numElements() + size - 1) / size;
    Shape codesShape =
        packed ? Shape{(param.numElements() + 1) / 2} : param.shape;
    return shapeIs(codes, codesShape) &&
           ((absmax.dtype == DType::F32 && absmax.shape == Shape{blocks}) ||
            fail("'" + absmax.name + "' must be f32 with one value per block"));
  }
  bool quantMap(const TensorInfo &map, int64_t entries = 256) {
    return (map.dtype == DType::F32 && map.shape == Shape{entries}) ||
           fail("'" + map.name + "' must be a " + std::to_string(entries) +
                "-entry f32 map");
  }

  /// A collective's group (world_size ranks rank_stride apart, groups that
  /// tile the program's ranks) and reduction.
  bool collective(bool reduces) {
    auto [size, stride] = collectiveGroupOf(inst);
    if (size < 1 || stride < 1 || size > program.worldSize ||
        stride > program.worldSize || program.worldSize % (size * stride) != 0)
      return fail("a collective over " + std::to_string(size) + " ranks " +
                  std::to_string(stride) + " apart in a program for " +
                  std::to_string(program.worldSize));
    if (reduces &&
        (inst.getInt("reduction") < 0 || inst.getInt("reduction") > 3))
      return fail("an unknown reduction");
    return true;
  }
  /// `whole` is `part` with a leading dimension world_size times larger.
  bool leadingSplit(const TensorInfo &whole, const TensorInfo &part) {
    if (!sameDType(whole, part))
      return false;
    if (whole.shape.empty() || whole.shape.size() != part.shape.size() ||
        !std::equal(whole.shape.begin() + 1, whole.shape.end(),
                    part.shape.begin() + 1) ||
        whole.shape[0] != part.shape[0] * collectiveGroupOf(inst).size)
      return fail("the leading dimension of '" + whole.name +
                  "' is not the group's world_size times that of '" +
                  part.name + "'");
    return true;
  }

  const Program &program;
  const Instruction &inst;
  std::string error;
};

Status Checker::run() {
  if (!spec())
    return Status::failure(error);
  bool ok = false;
  // Codes (of 8-bit state, of a 4-bit weight) are bytes no other kernel
  // interprets; reshapes, slices, splits, concatenations and all-gathers
  // move them (zero3 gathers a 4-bit weight's parts).
  bool quantized = inst.kernel == Kernel::AdamW8bitUpdate ||
                   inst.kernel == Kernel::AdamW4bitUpdate ||
                   inst.kernel == Kernel::SGD8bitUpdate ||
                   inst.kernel == Kernel::Matmul4bit;
  bool moves = inst.kernel == Kernel::Reshape || inst.kernel == Kernel::Slice ||
               inst.kernel == Kernel::Split || inst.kernel == Kernel::Concat ||
               inst.kernel == Kernel::AllGather;
  for (const std::vector<int32_t> *list : {&inst.operands, &inst.results})
    for (int32_t index : *list)
      if (index != kNotComputed && !quantized && !moves &&
          program.tensors[index].dtype == DType::U8)
        return Status::failure("'" + program.tensors[index].name +
                               "' is ui8, which only the 8-bit and 4-bit "
                               "optimizer updates, tg.matmul_4bit, "
                               "tg.reshape, tg.slice, tg.split, tg.concat "
                               "and tg.all_gather read");
  switch (inst.kernel) {
  case Kernel::Matmul:
    ok = product(/*withAddend=*/false);
    break;
  case Kernel::MatmulAdd:
    ok = product(/*withAddend=*/true);
    break;
  case Kernel::Matmul4bit:
    ok = weight4bit();
    break;
  case Kernel::Linear:
    ok = linear();
    break;
  case Kernel::MatmulBiasGrad:
    ok = biasGradProduct(/*gelu=*/false);
    break;
  case Kernel::MatmulGeluGrad:
    ok = biasGradProduct(/*gelu=*/true);
    break;
  case Kernel::Add:
  case Kernel::Sub:
  case Kernel::Mul:
  case Kernel::Div:
  case Kernel::Maximum:
  case Kernel::Minimum:
    ok = elementwiseBinary();
    break;
  case Kernel::Exp:
  case Kernel::Log:
  case Kernel::Tanh:
  case Kernel::Gelu:
    ok = unary();
    break;
#define TGC_UNARY(ID, FUNCTION, NAME, VALUE)                                   \
  case Kernel::ID:                                                             \
    ok = unary();                                                              \
    break;
#define TGC_ACTIVATION(ID, FUNCTION, NAME, VALUE, GRADIENT)                    \
  TGC_UNARY(ID, FUNCTION, NAME, VALUE)                                         \
  case Kernel::ID##Grad:                                                       \
    ok = activationGrad();                                                     \
    break;
#include "tgc/format/Kernels.def"
  case Kernel::Where: {
    Shape s1, s2;
    ok = counts(3, 1) && (in(0).dtype == DType::I1 || fail("bad condition")) &&
         floatT(in(1)) && sameDType(in(1), in(2)) && sameDType(in(1), out(0)) &&
         ((broadcast(in(0).shape, in(1).shape, s1) &&
           broadcast(s1, in(2).shape, s2) && s2 == out(0).shape) ||
          fail("where shapes do not broadcast"));
    break;
  }
  case Kernel::Softmax:
    ok = unary() && axisOk(inst.getInt("axis"), in(0).shape.size());
    break;
  case Kernel::SoftmaxGrad:
    ok = counts(2, 1) && floatT(in(0)) && same(in(0), in(1)) &&
         same(in(0), out(0)) && axisOk(inst.getInt("axis"), in(0).shape.size());
    break;
  case Kernel::LayerNorm: {
    // An optional fourth operand, the addend, and second result, the sum.
    const TensorInfo *x = nullptr;
    ok = normInput(3, x) && layerNorm(*x, in(1)) && same(in(1), in(2)) &&
         storedAs(out(0), *x);
    break;
  }
  case Kernel::LayerNormGrad: {
    // An optional fourth operand, the addend of input_grad, and fourth
    // result, its 16-bit copy.
    size_t results = inst.results.size() == 4 ? 4 : 3;
    ok = (inst.operands.size() == 4 ? counts(4, results) && same(in(3), in(0))
                                    : counts(3, results)) &&
         layerNorm(in(0), in(1)) && storedAs(in(2), in(0)) &&
         outLike(in(0), 0) && outLike(in(1), 1) && outLike(in(1), 2) &&
         (results == 3 || roundedInputGrad(3));
    break;
  }
  case Kernel::RmsNorm: {
    const TensorInfo *x = nullptr;
    ok = normInput(2, x) && layerNorm(*x, in(1)) && storedAs(out(0), *x);
    break;
  }
  case Kernel::RmsNormGrad: {
    size_t results = inst.results.size() == 3 ? 3 : 2;
    ok = (inst.operands.size() == 4 ? counts(4, results) && same(in(3), in(0))
                                    : counts(3, results)) &&
         layerNorm(in(0), in(1)) && storedAs(in(2), in(0)) &&
         outLike(in(0), 0) && outLike(in(1), 1) &&
         (results == 2 || roundedInputGrad(2));
    break;
  }
  case Kernel::Rope: {
    // The operand count first: in(0) of an instruction without operands
    // would read past them (found by the tgx fuzzer).
    if (!counts(inst.operands.size() == 3 ? 3 : 2, 1))
      break;
    const Shape &x = in(0).shape;
    ok = floatT(in(0)) && same(in(0), out(0)) &&
         (x.size() >= 2 || fail("rope's input must have rank >= 2")) &&
         (!inst.getBool("bshd") || x.size() == 4 ||
          fail("a bshd rope's input must be [B, T, H, D]")) &&
         (x.back() % 2 == 0 || fail("rope's head dimension must be even")) &&
         (in(1).dtype == DType::F32 || fail("rope's inv_freq must be f32")) &&
         shapeIs(in(1), {x.back() / 2});
    // Optional positions [B, T] (B the first dimension, T the positions').
    if (ok && inst.operands.size() == 3)
      ok =
          (x.size() >= 3 || fail("rope with positions needs [B, ..., T, D]")) &&
          indexT(in(2)) &&
          shapeIs(in(2), {x[0], x[x.size() - (inst.getBool("bshd") ? 3 : 2)]});
    break;
  }
  case Kernel::Embedding: {
    ok = counts(2, 1) && floatT(in(0)) && indexT(in(1)) &&
         (in(0).shape.size() == 2 || fail("the table must have rank 2")) &&
         (mixesInto(in(0).dtype, out(0).dtype) ||
          fail("the result must have the table's type, or f32 from an f16 "
               "or bf16 table"));
    if (ok) {
      Shape shape = in(1).shape;
      shape.push_back(in(0).shape[1]);
      ok = shapeIs(out(0), shape);
    }
    break;
  }
  case Kernel::EmbeddingGrad: {
    // An optional addend: the table's shape, its type or a 16-bit one
    // added into f32.
    bool addend = inst.operands.size() == 3;
    ok = counts(addend ? 3 : 2, 1) && indexT(in(0)) && floatT(in(1)) &&
         (out(0).shape.size() == 2 || fail("the table must have rank 2")) &&
         sameDType(in(1), out(0)) &&
         (!addend ||
          (floatT(in(2)) && shapeIs(in(2), out(0).shape) &&
           (in(2).dtype == out(0).dtype || out(0).dtype == DType::F32 ||
            fail("an embedding_grad addend is in the table's type, or 16 "
                 "bits for an f32 table"))));
    if (ok) {
      Shape shape = in(0).shape;
      shape.push_back(out(0).shape[1]);
      ok = shapeIs(in(1), shape);
    }
    if (ok && inst.hasAttr("padding_idx"))
      ok = ((inst.getInt("padding_idx") >= 0 &&
             inst.getInt("padding_idx") < out(0).shape[0]) ||
            fail("padding_idx is not a row of the table"));
    break;
  }
  case Kernel::Attention: {
    // Optional: a key mask operand, the row log-sum-exp result.
    size_t results = inst.results.size() == 2 ? 2 : 1;
    TensorInfo q, k, v;
    ok =
        (inst.operands.size() == 3 ? counts(3, results) : counts(4, results)) &&
        heads(out(0), q, k, v) &&
        (inst.operands.size() == 3 || keyMask(q, k, in(3))) &&
        attention(q, k, v, out(0), inst.operands.size() > 3) &&
        (results == 1 ||
         (inst.results[1] != kNotComputed && rowLse(q, out(1))) ||
         fail("the row log-sum-exp is always computed"));
    break;
  }
  case Kernel::AttentionGrad: {
    // Optional, in order: a key mask (an index tensor), the row
    // log-sum-exp (f32). Packed operands have one gradient, result 0.
    size_t operands = inst.operands.size();
    bool hasLse = operands > 5 && operands <= 7 && isFloat(in(operands - 1).dtype);
    bool hasMask = operands - (hasLse ? 1 : 0) == 6;
    TensorInfo q, k, v;
    ok = counts(5 + size_t(hasMask) + size_t(hasLse), 3) &&
         heads(in(3), q, k, v) && (!hasMask || keyMask(q, k, in(5))) &&
         (!hasLse || rowLse(q, in(operands - 1))) &&
         attention(q, k, v, in(3), hasMask) && same(in(3), in(4)) &&
         outLike(in(0), 0) &&
         (inst.getBool("packed")
              ? (inst.results[1] == kNotComputed &&
                 inst.results[2] == kNotComputed) ||
                    fail("packed attention_grad computes one gradient")
              : outLike(in(1), 1) && outLike(in(2), 2));
    break;
  }
  case Kernel::CrossEntropy:
    // An optional third operand, the loss's cotangent, and second result,
    // the logits' gradient.
    ok = (inst.operands.size() == 3
              ? counts(3, 2) && in(2).shape.empty() && isFloat(in(2).dtype) &&
                    same(in(0), out(1))
              : counts(2, 1)) &&
         targets(in(0), in(1)) &&
         (out(0).shape.empty() && isFloat(out(0).dtype)) && softcap();
    break;
  case Kernel::TargetCount:
    ok = counts(1, 1) && indexT(in(0)) &&
         (out(0).shape.empty() && isFloat(out(0).dtype));
    break;
  case Kernel::CrossEntropyGrad:
    ok = counts(3, 1) && targets(in(0), in(1)) &&
         (in(2).shape.empty() && isFloat(in(2).dtype)) && same(in(0), out(0)) &&
         softcap();
    break;
  case Kernel::Offload:
    ok = counts(2, 1) && same(in(0), out(0)) && same(in(1), out(0));
    break;
  case Kernel::Reload:
    ok = counts(1, 1) && same(in(0), out(0));
    break;
  case Kernel::Reshape:
    ok = counts(1, 1) && sameDType(in(0), out(0)) &&
         (in(0).numElements() == out(0).numElements() ||
          fail("element counts differ"));
    break;
  case Kernel::Transpose: {
    ok = counts(1, 1) && sameDType(in(0), out(0));
    if (ok) {
      std::vector<int64_t> perm = inst.getInts("permutation");
      std::vector<int64_t> sorted = perm;
      std::sort(sorted.begin(), sorted.end());
      Shape shape;
      for (size_t i = 0; ok && i < sorted.size(); ++i)
        ok = sorted[i] == int64_t(i);
      ok = ok && perm.size() == in(0).shape.size();
      if (!ok)
        fail("invalid permutation");
      for (size_t i = 0; ok && i < perm.size(); ++i)
        shape.push_back(in(0).shape[perm[i]]);
      ok = ok && shapeIs(out(0), shape);
    }
    break;
  }
  case Kernel::Slice:
    ok = counts(1, 1) && sameDType(in(0), out(0)) &&
         box(in(0).shape, out(0).shape);
    break;
  case Kernel::SliceGrad:
    ok = counts(1, 1) && floatT(in(0)) && sameDType(in(0), out(0)) &&
         box(out(0).shape, in(0).shape);
    break;
  case Kernel::Split: {
    ok = variadic(1, inst.results.size()) && inst.operands.size() == 1 &&
         !inst.results.empty();
    std::vector<const TensorInfo *> parts;
    for (size_t i = 0; ok && i < inst.results.size(); ++i)
      parts.push_back(&out(i));
    ok = ok && pieces(parts, in(0));
    break;
  }
  case Kernel::Concat: {
    ok = variadic(1, 1);
    std::vector<const TensorInfo *> parts;
    for (size_t i = 0; ok && i < inst.operands.size(); ++i)
      parts.push_back(&in(i));
    ok = ok && pieces(parts, out(0));
    break;
  }
  case Kernel::ReduceSum:
  case Kernel::ReduceMean:
  case Kernel::ReduceMax:
    ok = counts(1, 1) && floatT(in(0)) && reduction(in(0), out(0));
    break;
  case Kernel::Gather:
  case Kernel::GatherGrad: {
    // gather reads its operand (in 0) into the result; gather_grad adds its
    // gradient (in 0) into the shape of that operand (its result).
    bool grad = inst.kernel == Kernel::GatherGrad;
    ok = counts(2, 1) && sameDType(in(0), out(0)) && indexT(in(1)) &&
         (!grad || floatT(in(0)));
    if (ok) {
      const TensorInfo &operand = grad ? out(0) : in(0);
      const TensorInfo &gathered = grad ? in(0) : out(0);
      std::string error = shapes::gather(operand.shape, in(1).shape,
                                         gathered.shape, inst.getInt("axis"));
      ok = error.empty() || fail(error);
    }
    break;
  }
  case Kernel::TopK:
    ok = counts(1, 1) && floatT(in(0)) && indexT(out(0));
    if (ok) {
      std::string error =
          shapes::topK(in(0).shape, out(0).shape, inst.getInt("k"));
      ok = error.empty() || fail(error);
    }
    break;
  case Kernel::MoeRoute:
    ok = counts(1, 3) && indexT(in(0)) && indexT(out(0)) && indexT(out(1)) &&
         indexT(out(2));
    if (ok) {
      std::string error = shapes::moeRoute(in(0).shape, out(0).shape,
                                           out(1).shape, out(2).shape);
      ok = error.empty() || fail(error);
    }
    break;
  case Kernel::ExpertLinear: {
    ok = variadic(3, 1) && floatT(in(0)) && indexT(in(1)) &&
         sameDType(in(0), out(0));
    std::vector<Shape> weights;
    for (size_t i = 2; ok && i < inst.operands.size(); ++i) {
      ok = sameDType(in(i), in(0));
      weights.push_back(in(i).shape);
    }
    if (ok) {
      std::string error =
          shapes::expertLinear(in(0).shape, in(1).shape, weights, out(0).shape,
                               inst.getBool("transpose_weight"));
      ok = error.empty() || fail(error);
    }
    break;
  }
  case Kernel::ExpertLinearWeightGrad: {
    ok = inst.operands.size() == 3 && !inst.results.empty();
    if (!ok)
      fail("expects 3 operands and at least one result");
    ok = ok && floatT(in(0)) && sameDType(in(1), in(0)) && indexT(in(2));
    std::vector<Shape> results;
    for (size_t i = 0; ok && i < inst.results.size(); ++i) {
      ok = sameDType(out(i), in(0));
      results.push_back(out(i).shape);
    }
    if (ok) {
      std::string error =
          shapes::expertOuter(in(0).shape, in(1).shape, in(2).shape, results);
      ok = error.empty() || fail(error);
    }
    break;
  }
  case Kernel::Cumsum:
    ok = counts(1, 1) && same(in(0), out(0)) &&
         (isFloat(in(0).dtype) || indexT(in(0))) &&
         axisOk(inst.getInt("axis"), in(0).shape.size());
    break;
  case Kernel::ReduceMaxGrad:
    ok = counts(3, 1) && floatT(in(0)) && reduction(in(0), in(1)) &&
         same(in(1), in(2)) && same(in(0), out(0));
    break;
  case Kernel::BroadcastTo:
    ok = counts(1, 1) && sameDType(in(0), out(0)) &&
         broadcastsTo(in(0).shape, out(0).shape);
    break;
  case Kernel::SumTo:
    ok = counts(1, 1) && floatT(in(0)) && sameDType(in(0), out(0)) &&
         broadcastsTo(out(0).shape, in(0).shape);
    break;
  case Kernel::Cast:
    ok = counts(1, 1) && shapeIs(out(0), in(0).shape);
    break;
  case Kernel::MultiCast:
    ok = (!inst.operands.empty() &&
          inst.operands.size() == inst.results.size()) ||
         fail("expects as many results as operands, at least one");
    for (size_t i = 0; ok && i < inst.operands.size(); ++i)
      ok = floatT(in(i)) && floatT(out(i)) && shapeIs(out(i), in(i).shape);
    break;
  case Kernel::Constant:
    ok = counts(0, 1) && has("blob_offset") && has("blob_bytes");
    if (ok) {
      int64_t offset = inst.getInt("blob_offset"),
              bytes = inst.getInt("blob_bytes");
      ok = (bytes == out(0).bytes && offset >= 0 &&
            offset <= int64_t(program.constants.size()) - bytes) ||
           fail("the constant lies outside the constants blob");
    }
    break;
  case Kernel::Fill:
    ok = counts(0, 1);
    break;
  case Kernel::GeluGrad:
  case Kernel::TanhGrad:
    ok = activationGrad();
    break;
  case Kernel::Swiglu:
    ok = counts(2, 1) && floatT(in(0)) && same(in(1), in(0)) &&
         same(out(0), in(0));
    break;
  case Kernel::SwigluGrad:
    ok = counts(3, 2) && floatT(in(0)) && same(in(1), in(0)) &&
         same(in(2), in(0)) && same(out(0), in(0)) && same(out(1), in(0));
    break;
  case Kernel::SGDUpdate: {
    // param, grad, lr, step, then an optional momentum buffer (float) and an
    // optional apply predicate (i1 scalar), told apart by type.
    size_t n = inst.operands.size();
    bool ok4 = n >= 4 && n <= 6;
    bool buffer = ok4 && n >= 5 && in(4).dtype != DType::I1;
    bool apply = ok4 && n == size_t(4 + buffer + 1);
    ok = (ok4 && n == size_t(4 + buffer + apply) &&
          inst.results.size() == size_t(1 + buffer)) ||
         fail("expects param, grad, lr, step, an optional momentum buffer "
              "and an optional predicate");
    ok = ok && floatT(in(0)) && floatT(in(1)) && shapeIs(in(1), in(0).shape) &&
         scalar(in(2), DType::F32) && scalar(in(3), DType::I64) &&
         same(in(0), out(0)) &&
         (!buffer || (same(in(4), out(1)) && shapeIs(in(4), in(0).shape))) &&
         (!apply || scalar(in(4 + buffer), DType::I1)) &&
         (buffer == (SGDUpdateAttrs::read(inst).momentum != 0.0) ||
          fail(buffer ? "an sgd_update with a momentum buffer has momentum"
                      : "an sgd_update with momentum has a momentum buffer"));
    break;
  }
  case Kernel::AdamWUpdate:
    ok = adamwOperands(6, 3) && floatT(in(0)) && floatT(in(1)) &&
         floatT(in(2)) && floatT(in(3)) && shapeIs(in(1), in(0).shape) &&
         shapeIs(in(2), in(0).shape) && shapeIs(in(3), in(0).shape) &&
         scalar(in(4), DType::F32) && scalar(in(5), DType::I64) &&
         same(in(0), out(0)) && same(in(2), out(1)) && same(in(3), out(2)) &&
         roundingSeed();
    break;
  case Kernel::MultiAdamWUpdate: {
    // N params, grads, exp_avgs and exp_avg_sqs, lr, step and an optional
    // apply predicate; the N new params, exp_avgs and exp_avg_sqs.
    size_t n = inst.results.size() / 3;
    bool apply = inst.operands.size() == 4 * n + 3;
    ok = (n > 0 && inst.results.size() == 3 * n &&
          (inst.operands.size() == 4 * n + 2 || apply)) ||
         fail("expects N params, grads, exp_avgs and exp_avg_sqs, lr, step "
              "and an optional predicate, and 3 x N results");
    for (size_t i = 0; ok && i < n; ++i)
      ok = floatT(in(i)) && floatT(in(n + i)) && floatT(in(2 * n + i)) &&
           floatT(in(3 * n + i)) && shapeIs(in(n + i), in(i).shape) &&
           shapeIs(in(2 * n + i), in(i).shape) &&
           shapeIs(in(3 * n + i), in(i).shape) && same(in(i), out(i)) &&
           same(in(2 * n + i), out(n + i)) &&
           same(in(3 * n + i), out(2 * n + i));
    ok = ok && scalar(in(4 * n), DType::F32) &&
         scalar(in(4 * n + 1), DType::I64) &&
         (!apply || scalar(in(4 * n + 2), DType::I1));
    break;
  }
  case Kernel::AdafactorUpdate: {
    // param, grad, 1 or 2 state tensors, lr, step[, apply].
    size_t states = inst.results.size() - 1;
    size_t n = inst.operands.size();
    bool apply = n == 2 + states + 3;
    ok = ((states == 1 || states == 2) &&
          (n == 2 + states + 2 || apply)) ||
         fail("expects param, grad, one or two state tensors, lr, step and "
              "an optional predicate");
    if (!ok)
      break;
    const TensorInfo &param = in(0);
    ok = floatT(param) && floatT(in(1)) && shapeIs(in(1), param.shape) &&
         same(param, out(0)) && scalar(in(2 + states), DType::F32) &&
         scalar(in(3 + states), DType::I64) &&
         (!apply || scalar(in(4 + states), DType::I1));
    std::vector<Shape> expected;
    if (param.shape.size() >= 2) {
      expected.emplace_back(param.shape.begin(), param.shape.end() - 1);
      Shape col(param.shape.begin(), param.shape.end() - 2);
      col.push_back(param.shape.back());
      expected.push_back(col);
    } else {
      expected.push_back(param.shape);
    }
    ok = ok && (expected.size() == states ||
                fail("a parameter of rank >= 2 has two state tensors (row "
                     "and column), others one"));
    for (size_t k = 0; ok && k < states; ++k)
      ok = (in(2 + k).dtype == DType::F32 ||
            fail("Adafactor state must be f32")) &&
           shapeIs(in(2 + k), expected[k]) && same(in(2 + k), out(1 + k));
    ok = ok && (AdafactorUpdateAttrs::read(inst).clipThreshold > 0.0 ||
                fail("clip_threshold must be positive"));
    break;
  }
  case Kernel::AdamW8bitUpdate:
  case Kernel::AdamW4bitUpdate: {
    // param, grad, (codes, absmax) x 2, two maps, lr, step[, part]
    // [, apply].
    bool packed = inst.kernel == Kernel::AdamW4bitUpdate;
    int64_t entries = packed ? 16 : 256;
    ok = adamwOperands(10, 5) && floatT(in(0)) && floatT(in(1)) &&
         shapeIs(in(1), in(0).shape) &&
         quantizedState(in(0), in(2), in(3), packed) &&
         quantizedState(in(0), in(4), in(5), packed) &&
         quantMap(in(6), entries) && quantMap(in(7), entries) &&
         scalar(in(8), DType::F32) && scalar(in(9), DType::I64) &&
         same(in(0), out(0)) && same(in(2), out(1)) && same(in(3), out(2)) &&
         same(in(4), out(3)) && same(in(5), out(4)) && roundingSeed();
    break;
  }
  case Kernel::SGD8bitUpdate: {
    // param, grad, codes, absmax, map, lr, step[, apply].
    size_t n = inst.operands.size();
    ok = (n == 8 ? counts(8, 3) && scalar(in(7), DType::I1) : counts(7, 3)) &&
         floatT(in(0)) && floatT(in(1)) && shapeIs(in(1), in(0).shape) &&
         quantizedState(in(0), in(2), in(3)) && quantMap(in(4)) &&
         scalar(in(5), DType::F32) && scalar(in(6), DType::I64) &&
         same(in(0), out(0)) && same(in(2), out(1)) && same(in(3), out(2));
    break;
  }
  case Kernel::GlobalNorm:
    ok = variadic(1, 1) && scalar(out(0), DType::F32);
    for (size_t i = 0; ok && i < inst.operands.size(); ++i)
      ok = floatT(in(i));
    break;
  case Kernel::AllFinite:
    ok = variadic(1, 1) && scalar(out(0), DType::I1);
    for (size_t i = 0; ok && i < inst.operands.size(); ++i)
      ok = floatT(in(i));
    break;
  case Kernel::ScaleLoss:
    ok = counts(2, 1) && (in(0).shape.empty() && isFloat(in(0).dtype)) &&
         scalar(in(1), DType::F32) && scalar(out(0), DType::F32);
    break;
  case Kernel::Unscale:
    ok = counts(2, 1) && floatT(in(0)) && scalar(in(1), DType::F32) &&
         floatT(out(0)) && shapeIs(out(0), in(0).shape);
    break;
  case Kernel::AllReduce:
    ok = counts(1, 1) && collective(true) && floatT(in(0)) &&
         same(in(0), out(0));
    break;
  case Kernel::ReduceScatter:
    ok = counts(1, 1) && collective(true) && floatT(in(0)) &&
         leadingSplit(in(0), out(0));
    break;
  case Kernel::AllGather:
    ok = counts(1, 1) && collective(false) && leadingSplit(out(0), in(0));
    break;
  case Kernel::Shard:
    ok = counts(1, 1) && collective(false) && leadingSplit(in(0), out(0));
    break;
  case Kernel::UpdateLossScale:
    ok = counts(3, 2) && scalar(in(0), DType::F32) &&
         scalar(in(1), DType::I64) && scalar(in(2), DType::I1) &&
         scalar(out(0), DType::F32) && scalar(out(1), DType::I64) &&
         (UpdateLossScaleAttrs::read(inst).growthInterval >= 1 ||
          fail("bad growth_interval"));
    break;
  }
  if (!ok)
    return Status::failure(error.empty() ? "invalid instruction" : error);
  return Status::success();
}

} // namespace

Status verifyInstruction(const Program &program, const Instruction &inst) {
  auto indexOk = [&](int32_t index) {
    return index >= 0 && size_t(index) < program.tensors.size();
  };
  for (int32_t index : inst.operands)
    if (!indexOk(index))
      return Status::failure("operand tensor index " + std::to_string(index) +
                             " out of range");
  bool anyResult = false;
  for (int32_t index : inst.results) {
    if (index == kNotComputed && mayLeaveResults(inst.kernel))
      continue;
    if (!indexOk(index))
      return Status::failure("result tensor index " + std::to_string(index) +
                             " out of range");
    anyResult = true;
  }
  if (!inst.results.empty() && !anyResult)
    return Status::failure("computes none of its results");
  return Checker(program, inst).run();
}

Status verifyInstructions(const Program &program) {
  auto verifyList = [&](const std::vector<Instruction> &list,
                        const std::string &prefix) {
    for (size_t i = 0; i < list.size(); ++i)
      if (Status status = verifyInstruction(program, list[i]); !status.ok())
        return Status::failure(prefix + "instruction #" + std::to_string(i) +
                               " (" + kernelName(list[i].kernel) +
                               "): " + status.error);
    return Status::success();
  };
  Status status = verifyList(program.instructions, "");
  for (size_t e = 0; status.ok() && e < program.entries.size(); ++e)
    status = verifyList(program.entries[e].instructions,
                        "entry point '" + program.entries[e].name + "': ");
  return status;
}

Status checkQuantizedWeights(const Program &program) {
  std::vector<bool> used(program.tensors.size(), false);
  for (const QuantizedWeight &weight : program.quantized) {
    bool inRange = true;
    for (int32_t index : weight.tensors())
      inRange =
          inRange && index >= -1 && index < int32_t(program.tensors.size());
    if (!inRange || weight.codes < 0 || weight.absmax < 0)
      return Status::failure("a 4-bit weight's tensor index is out of range "
                             "(or its codes or absmax missing)");
    const TensorInfo &codes = program.tensors[size_t(weight.codes)];
    auto fail = [&](const std::string &message) {
      return Status::failure("the 4-bit weight '" + codes.name +
                             "': " + message);
    };
    if (weight.rows <= 0 || weight.cols <= 0 ||
        weight.rows > (int64_t(1) << 40) / weight.cols)
      return fail("its shape " + std::to_string(weight.rows) + " x " +
                  std::to_string(weight.cols) + " is out of range");
    if (weight.blockSize < 2 || weight.blockSize % 2 ||
        weight.blockSize > quant4::kMaxBlockSize)
      return fail("its block size " + std::to_string(weight.blockSize) +
                  " is not even in [2, " +
                  std::to_string(quant4::kMaxBlockSize) + "]");
    if ((weight.nestedAbsmax < 0) != (weight.offset < 0))
      return fail("a double-quantized absmax needs both its nested absmax "
                  "and its offset");
    quant4::Layout layout{weight.rows * weight.cols, weight.blockSize};
    // Each tensor a frozen parameter (or zero3's part of one) of its type
    // and whole shape, and of this weight alone.
    auto expect = [&](int32_t index, const char *what, DType dtype,
                      std::vector<int64_t> shape) -> Status {
      if (index < 0)
        return Status::success();
      const TensorInfo &info = program.tensors[size_t(index)];
      if (info.storage != Storage::Persistent || info.role != Role::Param ||
          !info.frozen)
        return fail("its " + std::string(what) + " '" + info.name +
                    "' is not a frozen parameter");
      if (info.dtype != dtype || info.wholeShape() != shape)
        return fail("its " + std::string(what) + " '" + info.name +
                    "' is not " + dtypeName(dtype) + " of whole shape " +
                    formatShape(shape));
      if (used[size_t(index)])
        return fail("its " + std::string(what) + " '" + info.name +
                    "' belongs to another 4-bit weight too");
      used[size_t(index)] = true;
      return Status::success();
    };
    Status status =
        expect(weight.codes, "codes", DType::U8, {layout.codeBytes()});
    if (status.ok())
      status =
          expect(weight.absmax, "absmax",
                 weight.nested() ? DType::U8 : DType::F32, {layout.blocks()});
    if (status.ok())
      status = expect(weight.nestedAbsmax, "nested absmax", DType::F32,
                      {layout.nestedBlocks()});
    if (status.ok())
      status = expect(weight.offset, "offset", DType::F32, {});
    if (!status.ok())
      return status;
  }
  // A LoRA adapter on a 4-bit weight adds B A to the weight the table lays
  // out (exports merge it there).
  for (const LoraAdapter &adapter : program.adapters) {
    const QuantizedWeight *weight = program.quantizedWith(adapter.base);
    if (!weight)
      continue;
    int64_t in = program.tensors[size_t(adapter.a)].wholeShape()[1],
            out = program.tensors[size_t(adapter.b)].wholeShape()[0];
    if (adapter.fanInFanOut ? (weight->rows != in || weight->cols != out)
                            : (weight->rows != out || weight->cols != in))
      return Status::failure(
          "the 4-bit weight '" + program.tensors[size_t(adapter.base)].name +
          "': its LoRA adapter's B A is " + std::to_string(out) + " x " +
          std::to_string(in) + ", the weight " + std::to_string(weight->rows) +
          " x " + std::to_string(weight->cols) +
          (adapter.fanInFanOut ? " (transposed, fan_in_fan_out)" : ""));
  }
  // The bytes of the constant `index` computed by `list`, or null.
  auto constantOf = [&](const std::vector<Instruction> &list, int32_t index,
                        size_t bytes) -> const uint8_t * {
    for (const Instruction &inst : list)
      if (inst.kernel == Kernel::Constant && inst.results.size() == 1 &&
          inst.results[0] == index) {
        int64_t offset = inst.getInt("blob_offset");
        if (inst.getInt("blob_bytes") != int64_t(bytes) || offset < 0 ||
            size_t(offset) + bytes > program.constants.size())
          return nullptr;
        return program.constants.data() + offset;
      }
    return nullptr;
  };
  // Every product's codebook is NF4's or FP4's values and its nested map
  // bitsandbytes' dynamic map; a product that reads a weight's tensors
  // directly (not gathered) reads them as the table lays them out.
  auto check = [&](const std::vector<Instruction> &list) -> Status {
    for (const Instruction &inst : list) {
      if (inst.kernel != Kernel::Matmul4bit)
        continue;
      auto a = Matmul4bitAttrs::read(inst);
      const TensorInfo &codes = program.tensors[inst.operands[1]];
      auto fail = [&](const std::string &message) {
        return Status::failure("the 4-bit weight '" + codes.name + "': " +
                               message);
      };
      const uint8_t *map =
          constantOf(list, inst.operands[3], sizeof(float) * quant4::kValues);
      float values[quant4::kValues];
      quant4::Type type;
      if (map)
        std::memcpy(values, map, sizeof(values));
      if (!map || !quant4TypeOf(values, type))
        return fail("its codebook is not a constant of NF4's or FP4's values");
      bool nested = inst.operands.size() == 7;
      if (nested) {
        const uint8_t *nestedMap = constantOf(
            list, inst.operands[5], sizeof(float) * quant4::kNestedValues);
        if (!nestedMap || std::memcmp(nestedMap, quant4::kDynamicMapBits,
                                      sizeof(quant4::kDynamicMapBits)) != 0)
          return fail("its nested map is not a constant of bitsandbytes' "
                      "dynamic map");
      }
      bool fp4 = type == quant4::Type::FP4;
      if (codes.storage != Storage::Persistent) {
        // Gathered (zero3): a weight of the table of this layout.
        bool known = false;
        for (const QuantizedWeight &weight : program.quantized)
          known = known || (weight.rows == a.rows && weight.cols == a.cols &&
                            weight.blockSize == a.blockSize &&
                            weight.fp4 == fp4 && weight.nested() == nested);
        if (!known)
          return fail("a product reads it with a layout no weight of the "
                      "executable's table of 4-bit weights has");
        continue;
      }
      const QuantizedWeight *weight = program.quantizedWith(inst.operands[1]);
      if (!weight)
        return fail("a product reads it, but it is not in the executable's "
                    "table of 4-bit weights");
      if (weight->absmax != inst.operands[2] ||
          weight->nestedAbsmax != (nested ? inst.operands[4] : -1) ||
          weight->offset != (nested ? inst.operands[6] : -1) ||
          weight->rows != a.rows || weight->cols != a.cols ||
          weight->blockSize != a.blockSize || weight->fp4 != fp4)
        return fail("a product reads it with another layout than the "
                    "table's");
    }
    return Status::success();
  };
  Status status = check(program.instructions);
  for (size_t e = 0; status.ok() && e < program.entries.size(); ++e)
    status = check(program.entries[e].instructions);
  return status;
}

} // namespace tgc::rt
