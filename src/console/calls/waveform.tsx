/**
 * A recording's waveform: the audio fetched through its signed link (same
 * origin), decoded by the browser, and drawn as peaks on a canvas. Nothing
 * is drawn when the browser cannot decode it.
 */
import { useEffect, useRef, useState } from "react";

const BARS = 200;

/** The peak of each of `bars` slices of the first channel, 0 to 1. */
function peaks(samples: Float32Array, bars: number): number[] {
  const out: number[] = [];
  const step = Math.max(1, Math.floor(samples.length / bars));
  for (let b = 0; b < bars; b++) {
    let max = 0;
    for (let i = b * step; i < Math.min(samples.length, (b + 1) * step); i++) {
      const v = Math.abs(samples[i]!);
      if (v > max) max = v;
    }
    out.push(max);
  }
  return out;
}

export function Waveform({ src, label }: { src: string; label: string }) {
  const canvas = useRef<HTMLCanvasElement>(null);
  const [bars, setBars] = useState<number[] | undefined>(undefined);
  useEffect(() => {
    const abort = new AbortController();
    let context: AudioContext | undefined;
    (async () => {
      const res = await fetch(src, { signal: abort.signal, credentials: "omit" });
      if (!res.ok) return;
      context = new AudioContext();
      const audio = await context.decodeAudioData(await res.arrayBuffer());
      if (!abort.signal.aborted) setBars(peaks(audio.getChannelData(0), BARS));
    })()
      .catch(() => setBars(undefined))
      .finally(() => void context?.close());
    return () => abort.abort();
  }, [src]);
  useEffect(() => {
    const c = canvas.current;
    const g = c?.getContext("2d");
    if (c === null || g === null || g === undefined || bars === undefined) return;
    const { width, height } = c;
    g.clearRect(0, 0, width, height);
    g.fillStyle = getComputedStyle(c).color;
    const w = width / bars.length;
    const top = Math.max(...bars, 1e-6);
    bars.forEach((p, i) => {
      const h = Math.max(1, (p / top) * height);
      g.fillRect(i * w, (height - h) / 2, Math.max(1, w - 1), h);
    });
  }, [bars]);
  if (bars === undefined) return null;
  return <canvas ref={canvas} className="waveform" width={800} height={80} role="img" aria-label={label} />;
}
