/**
 * The Service's call error codes (138xxx, `calling-facts.md`) in words for agents and
 * supervisors. The server puts them in `call.state.reason` (with the Service's own message
 * after them) and the code in `call.state.errorCode`; pages may use them for codes they get
 * elsewhere.
 */
const CALL_ERRORS: Readonly<Record<number, string>> = {
  138002: 'Too many calls at once on this number (the concurrent-call limit)',
  138006: 'No calling permission from this customer',
  138007: 'The call could not connect in time (the answer was not applied in time)',
  138019: 'The call could not be set up',
  138020: 'The call’s media relay failed',
  138021: 'No audio was received from the other side',
  138022: 'Audio could not be sent to the other side',
  138023: 'The call was accepted but no audio ever flowed',
};

/** The words for a Service call error code, or undefined for a code not listed. */
export function describeCallError(code: number | string | undefined): string | undefined {
  if (code === undefined) return undefined;
  const n = typeof code === 'number' ? code : /^\d{1,9}$/.test(code) ? Number(code) : NaN;
  return CALL_ERRORS[n];
}

/** The reason to show for a failed call: our words for the code, then the Service's message. */
export function callErrorReason(code: number | string | undefined, serviceMessage: string | undefined): string | undefined {
  const words = describeCallError(code);
  if (!words) return serviceMessage;
  return serviceMessage && serviceMessage !== words ? `${words} (${code}: ${serviceMessage})` : `${words} (${code})`;
}
