// A token's routed rows in the reference's order of adds, for the WGSL MoE kernels' routed sums
// (moeExperts.ts, moeExpertsFp8Ptpc.ts): there is no routed-row layout in memory, so a thread
// walks token t's choices ids[t * K + k] that fall in this rank's experts [first, first +
// numLocal), in ascending key local * K + k (ascending local expert, then k), K searches of K.

/**
 * WGSL that runs `body` once per such choice of token `t`, in that order, with `next` the
 * choice's key (uniforms u.K, u.first, u.numLocal; binding `ids`). `body`'s lines after its
 * first are indented by 4 spaces, as the loop's; the text ends at the loop's closing brace.
 */
export function eachLocalChoiceWgsl(body: string): string {
  return `// the token's local (expert, k) in ascending key local*K + k
  var last = -1;
  for (var step = 0u; step < u.K; step = step + 1u) {
    var next = -1;
    for (var k = 0u; k < u.K; k = k + 1u) {
      let rel = ids[t * u.K + k] - i32(u.first);
      if (rel >= 0 && rel < i32(u.numLocal)) {
        let key = rel * i32(u.K) + i32(k);
        if (key > last && (next < 0 || key < next)) { next = key; }
      }
    }
    if (next < 0) { break; }
    last = next;
    ${body}
  }`;
}
