// Which index a top-k gives an exactly tied value (moeRoute's and qsaSelect's `ties` attribute).
//
// 'lower-index' (the default, ATOM's rule): largest first, an exact tie to the lower index
// (aiter topk_softmax's argmax reduce; the QSA indexer's stable top-k).
//
// 'torch-cpu': what torch.topk(values, k) (largest, sorted) returns on the CPU, so a dump made
// by the Hugging Face module in PyTorch on the CPU routes and selects as hcsp does. torch
// (aten/src/ATen/native/TopKImpl.h topk_impl_loop, called from cpu/SortingKernel.cpp
// topk_kernel with accscalar_t = scalar_t for float) fills (value, index) pairs and, with a
// comparator on the values only (NaN above every number), runs std::partial_sort(first,
// first + k, last) when k * 64 <= n, else std::nth_element(first, first + k - 1, last) and,
// sorted, std::sort(first, first + k - 1); the k pairs' indices are the answer. Ties land
// where libstdc++'s algorithms put them, so this is a port of those (GCC 12's
// bits/stl_algo.h and bits/stl_heap.h as installed here; the GCC that built a given torch
// wheel was not read, and the host device's test compares against this machine's):
// heap select + sort_heap, introselect, introsort with its final insertion sort (threshold 16).
// The host device calls libstdc++'s own std:: algorithms (native numerics/torch_cpu_topk.h),
// the oracle this port is tested against.

export const TOPK_TIES = ['lower-index', 'torch-cpu'] as const;
export type TopkTies = (typeof TOPK_TIES)[number];

/** the `ties` attribute's value (absent = 'lower-index'); anything else is refused by the op's declaration */
export function topkTiesOf(attrs: Readonly<Record<string, unknown>>): TopkTies {
  return attrs.ties === 'torch-cpu' ? 'torch-cpu' : 'lower-index';
}

/**
 * The k indices of the largest values, largest first, an exact tie to the lower index (strict
 * >, a taken mask: a NaN is taken where it stands in index order, never over an earlier value).
 */
export function lowerIndexTopk(values: ArrayLike<number>, k: number): Int32Array {
  const n = values.length;
  const taken = new Uint8Array(n);
  const out = new Int32Array(k);
  for (let j = 0; j < k; j++) {
    let best = -1;
    for (let e = 0; e < n; e++) if (!taken[e] && (best < 0 || values[e]! > values[best]!)) best = e;
    taken[best] = 1;
    out[j] = best;
  }
  return out;
}

/** the top-k indices under `ties` (k in [1, n]) */
export function topkIndices(values: ArrayLike<number>, k: number, ties: TopkTies): Int32Array {
  return ties === 'torch-cpu' ? torchCpuTopk(values, k) : lowerIndexTopk(values, k);
}

/** the ops that take a `ties` attribute */
const TIES_OPS: ReadonlySet<string> = new Set(['moeRoute', 'qsaSelect']);

/** why a device without a port of the 'torch-cpu' rule refuses an op that asks for it */
export function torchCpuTiesRefusal(op: string, backend: string): string {
  return `${op} ties=torch-cpu runs on cpu and the host device; ${backend} has only the 'lower-index' rule`;
}

/**
 * Refuses, at graph preparation, a graph whose moeRoute or qsaSelect asks for ties=torch-cpu
 * on a device whose kernels have only the 'lower-index' rule (WGSL, the GPU kernels): one
 * error naming the op, the attribute and the backend, never a silent fallback.
 */
export function refuseTorchCpuTies(
  graph: { readonly nodes: readonly { op: string; id: number | string; scope: string; attrs: Readonly<Record<string, unknown>> }[] },
  backend: string,
): void {
  const node = graph.nodes.find((n) => TIES_OPS.has(n.op) && n.attrs.ties === 'torch-cpu');
  if (node) throw new Error(`${torchCpuTiesRefusal(node.op, backend)} (node ${node.id} at ${node.scope})`);
}

/** libstdc++'s _S_threshold: introsort leaves runs of at most 16 to the final insertion sort */
const THRESHOLD = 16;

/** the (value, index) pairs torch sorts, with its descending comparator on the values */
class PairQueue {
  readonly v: Float64Array;
  readonly ix: Int32Array;
  constructor(values: ArrayLike<number>) {
    this.v = Float64Array.from(values);
    this.ix = new Int32Array(values.length);
    for (let j = 0; j < values.length; j++) this.ix[j] = j;
  }
  /** torch's comparator for largest = true: x before y when x is NaN and y is not, or x > y */
  static before(x: number, y: number): boolean {
    return (Number.isNaN(x) && !Number.isNaN(y)) || x > y;
  }
  comp(a: number, b: number): boolean {
    return PairQueue.before(this.v[a]!, this.v[b]!);
  }
  swap(a: number, b: number): void {
    const v = this.v[a]!;
    const i = this.ix[a]!;
    this.v[a] = this.v[b]!;
    this.ix[a] = this.ix[b]!;
    this.v[b] = v;
    this.ix[b] = i;
  }
  move(to: number, from: number): void {
    this.v[to] = this.v[from]!;
    this.ix[to] = this.ix[from]!;
  }
  put(to: number, v: number, i: number): void {
    this.v[to] = v;
    this.ix[to] = i;
  }
}

/** C++'s integer division of a possibly negative numerator by 2 (truncation toward zero) */
const half = (n: number): number => Math.trunc(n / 2);

/** std::__lg: floor(log2(n)) for n >= 1 */
const lg = (n: number): number => 31 - Math.clz32(n);

// ---- bits/stl_heap.h ------------------------------------------------------------------------

function pushHeap(q: PairQueue, first: number, hole: number, top: number, v: number, i: number): void {
  let parent = half(hole - 1);
  while (hole > top && PairQueue.before(q.v[first + parent]!, v)) {
    q.move(first + hole, first + parent);
    hole = parent;
    parent = half(hole - 1);
  }
  q.put(first + hole, v, i);
}

function adjustHeap(q: PairQueue, first: number, hole: number, len: number, v: number, i: number): void {
  const top = hole;
  let second = hole;
  while (second < half(len - 1)) {
    second = 2 * (second + 1);
    if (q.comp(first + second, first + second - 1)) second--;
    q.move(first + hole, first + second);
    hole = second;
  }
  if ((len & 1) === 0 && second === half(len - 2)) {
    second = 2 * (second + 1);
    q.move(first + hole, first + second - 1);
    hole = second - 1;
  }
  pushHeap(q, first, hole, top, v, i);
}

function popHeap(q: PairQueue, first: number, last: number, result: number): void {
  const v = q.v[result]!;
  const i = q.ix[result]!;
  q.move(result, first);
  adjustHeap(q, first, 0, last - first, v, i);
}

function makeHeap(q: PairQueue, first: number, last: number): void {
  const len = last - first;
  if (len < 2) return;
  for (let parent = half(len - 2); ; parent--) {
    adjustHeap(q, first, parent, len, q.v[first + parent]!, q.ix[first + parent]!);
    if (parent === 0) return;
  }
}

function sortHeap(q: PairQueue, first: number, last: number): void {
  while (last - first > 1) {
    last--;
    popHeap(q, first, last, last);
  }
}

// ---- bits/stl_algo.h ------------------------------------------------------------------------

function heapSelect(q: PairQueue, first: number, middle: number, last: number): void {
  makeHeap(q, first, middle);
  for (let i = middle; i < last; i++) if (q.comp(i, first)) popHeap(q, first, middle, i);
}

function partialSort(q: PairQueue, first: number, middle: number, last: number): void {
  heapSelect(q, first, middle, last);
  sortHeap(q, first, middle);
}

function moveMedianToFirst(q: PairQueue, result: number, a: number, b: number, c: number): void {
  if (q.comp(a, b)) {
    if (q.comp(b, c)) q.swap(result, b);
    else if (q.comp(a, c)) q.swap(result, c);
    else q.swap(result, a);
  } else if (q.comp(a, c)) q.swap(result, a);
  else if (q.comp(b, c)) q.swap(result, c);
  else q.swap(result, b);
}

function unguardedPartition(q: PairQueue, first: number, last: number, pivot: number): number {
  for (;;) {
    while (q.comp(first, pivot)) first++;
    last--;
    while (q.comp(pivot, last)) last--;
    if (!(first < last)) return first;
    q.swap(first, last);
    first++;
  }
}

function unguardedPartitionPivot(q: PairQueue, first: number, last: number): number {
  const mid = first + half(last - first);
  moveMedianToFirst(q, first, first + 1, mid, last - 1);
  return unguardedPartition(q, first + 1, last, first);
}

function unguardedLinearInsert(q: PairQueue, last: number): void {
  const v = q.v[last]!;
  const i = q.ix[last]!;
  let next = last - 1;
  while (PairQueue.before(v, q.v[next]!)) {
    q.move(last, next);
    last = next;
    next--;
  }
  q.put(last, v, i);
}

function insertionSort(q: PairQueue, first: number, last: number): void {
  if (first === last) return;
  for (let i = first + 1; i !== last; i++) {
    if (q.comp(i, first)) {
      const v = q.v[i]!;
      const ix = q.ix[i]!;
      for (let j = i; j > first; j--) q.move(j, j - 1);
      q.put(first, v, ix);
    } else unguardedLinearInsert(q, i);
  }
}

function finalInsertionSort(q: PairQueue, first: number, last: number): void {
  if (last - first > THRESHOLD) {
    insertionSort(q, first, first + THRESHOLD);
    for (let i = first + THRESHOLD; i !== last; i++) unguardedLinearInsert(q, i);
  } else insertionSort(q, first, last);
}

function introsortLoop(q: PairQueue, first: number, last: number, depth: number): void {
  while (last - first > THRESHOLD) {
    if (depth === 0) {
      partialSort(q, first, last, last);
      return;
    }
    depth--;
    const cut = unguardedPartitionPivot(q, first, last);
    introsortLoop(q, cut, last, depth);
    last = cut;
  }
}

function sort(q: PairQueue, first: number, last: number): void {
  if (first === last) return;
  introsortLoop(q, first, last, lg(last - first) * 2);
  finalInsertionSort(q, first, last);
}

function nthElement(q: PairQueue, first: number, nth: number, last: number): void {
  if (first === last || nth === last) return;
  let depth = lg(last - first) * 2;
  while (last - first > 3) {
    if (depth === 0) {
      heapSelect(q, first, nth + 1, last);
      q.swap(first, nth);
      return;
    }
    depth--;
    const cut = unguardedPartitionPivot(q, first, last);
    if (cut <= nth) first = cut;
    else last = cut;
  }
  insertionSort(q, first, last);
}

/**
 * torch.topk(values, k, largest=True, sorted=True).indices on the CPU: the k indices in the
 * order torch returns them (largest first; exact ties wherever libstdc++ leaves them).
 */
export function torchCpuTopk(values: ArrayLike<number>, k: number): Int32Array {
  const n = values.length;
  if (!Number.isInteger(k) || k < 1 || k > n) throw new Error(`torch-cpu top-k: k ${k} must be in [1, ${n}]`);
  const q = new PairQueue(values);
  if (k * 64 <= n) partialSort(q, 0, k, n);
  else {
    nthElement(q, 0, k - 1, n);
    sort(q, 0, k - 1);
  }
  return q.ix.slice(0, k);
}
