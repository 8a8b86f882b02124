/**
 * The agent page's level meters, one for each side of the call: the agent's
 * microphone (ready-check and call; 0 while muted or on hold, when the caller hears
 * nothing of it) and the caller's voice. Written straight into their bars (the Preact
 * panels leave the bars' width alone) METER_EVERY_MS apart: a level meter reads as well at
 * 15 updates a second as at the display's 60, and each update costs the page a frame
 * (style, paint, composite) for the whole shift, since the microphone stays open.
 */
export const METER_EVERY_MS = 66;
/** How much of the shown level stays after one update (fast attack, slow release: ~0.9 per 60 Hz frame). */
const RELEASE = 0.66;

export function startMeters(level: () => number, silenced: () => boolean, caller: () => number): void {
  let shown = 0;
  let heard = 0;
  const update = () => {
    // Short sounds stay visible long enough to be seen. Muted or on hold the caller hears
    // nothing of the microphone: the meter drops at once.
    shown = silenced() ? 0 : Math.max(level(), shown * RELEASE);
    heard = Math.max(caller(), heard * RELEASE);
    setMeter('input-level', shown);
    setMeter('caller-level', heard);
  };
  setInterval(update, METER_EVERY_MS);
}

function setMeter(id: string, level: number): void {
  const meter = document.querySelector<HTMLElement>(`[data-testid="${id}"]`);
  const pct = String(Math.round(level * 100));
  if (!meter || meter.getAttribute('aria-valuenow') === pct) return;
  meter.setAttribute('aria-valuenow', pct);
  (meter.firstElementChild as HTMLElement).style.width = `${pct}%`;
}
