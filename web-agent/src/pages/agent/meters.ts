/**
 * The agent page's two microphone level meters (ready-check and in-call), written at
 * display rate straight into their bars; the Preact panels leave the bars' width alone.
 * In a hidden tab requestAnimationFrame pauses, which is fine (nobody looks).
 */
export function startMeters(level: () => number, muted: () => boolean): void {
  let shown = 0;
  const loop = () => {
    // Fast attack, slow release: short sounds stay visible long enough to be seen.
    shown = Math.max(level(), shown * 0.9);
    setMeter('input-level', shown);
    setMeter('call-input-level', muted() ? 0 : shown);
    requestAnimationFrame(loop);
  };
  requestAnimationFrame(loop);
}

function setMeter(id: string, level: number): void {
  const meter = document.querySelector<HTMLElement>(`[data-testid="${id}"]`);
  const pct = String(Math.round(level * 100));
  if (!meter || meter.getAttribute('aria-valuenow') === pct) return;
  meter.setAttribute('aria-valuenow', pct);
  (meter.firstElementChild as HTMLElement).style.width = `${pct}%`;
}
