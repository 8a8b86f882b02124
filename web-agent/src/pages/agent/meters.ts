/**
 * The agent page's level meters, one for each side of the call: the agent's
 * microphone (ready-check and call; 0 while muted or on hold, when the caller hears
 * nothing of it) and the caller's voice. Written at display rate straight into their bars;
 * the Preact panels leave the bars' width alone. In a hidden tab requestAnimationFrame
 * pauses, which is fine (nobody looks).
 */
export function startMeters(level: () => number, silenced: () => boolean, caller: () => number): void {
  let shown = 0;
  let heard = 0;
  const loop = () => {
    // Fast attack, slow release: short sounds stay visible long enough to be seen.
    // Muted or on hold the caller hears nothing of the microphone: the meter drops at once.
    shown = silenced() ? 0 : Math.max(level(), shown * 0.9);
    heard = Math.max(caller(), heard * 0.9);
    setMeter('input-level', shown);
    setMeter('caller-level', heard);
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
