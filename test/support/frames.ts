/**
 * How much of what was sent was heard, frame by frame: audio that crossed a
 * jitter buffer (src/rtp/jitter-buffer.ts) is played out in real time, and a
 * stalled event loop (a busy machine, other test workers) can make the
 * buffer run dry and play silence between two frames, or overflow and drop
 * the oldest. So a test of where audio goes counts the sent frames found,
 * exact and in order, in what was heard, rather than asking for one
 * unbroken run of it.
 */

/** Frames of `sent` (`frame` samples or bytes each) found exactly, one after another, in `heard`. */
export function framesHeardInOrder(heard: ArrayLike<number>, sent: ArrayLike<number>, frame = 160): number {
  let found = 0;
  let from = 0;
  for (let k = 0; k + frame <= sent.length; k += frame) {
    const at = indexOfRun(heard, sent, k, frame, from);
    if (at < 0) continue;
    found++;
    from = at + frame;
  }
  return found;
}

/** Where all of `sent` occurs, exact and unbroken, in `heard`; -1 if nowhere. */
export function indexOfAll(heard: ArrayLike<number>, sent: ArrayLike<number>): number {
  return indexOfRun(heard, sent, 0, sent.length, 0);
}

/** Where `sent[start, start + length)` first occurs in `heard` at or after `from`; -1 if nowhere. */
function indexOfRun(
  heard: ArrayLike<number>,
  sent: ArrayLike<number>,
  start: number,
  length: number,
  from: number,
) {
  outer: for (let i = from; i + length <= heard.length; i++) {
    for (let j = 0; j < length; j++) if (heard[i + j] !== sent[start + j]) continue outer;
    return i;
  }
  return -1;
}
