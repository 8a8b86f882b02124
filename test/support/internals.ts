/**
 * Tests and the emulator reach into libraries' internals in a few places (werift's DTLS and
 * ICE classes, opusscript's instance): each such reach goes through here, so it is named and
 * typed at the call site instead of cast there. Each caller pins what it expects (a version
 * check or a test that fails when the internal moves).
 */

/** A property the library does not declare (its internals), read as the caller's type. */
export function internal<T>(target: object, key: string | symbol): T | undefined {
  return Reflect.get(target, key) as T | undefined;
}

/**
 * Wrap the method `name` of `proto` (a class's prototype) once: `wrap` gets the original and
 * returns the replacement. `mark` makes a second call a no-op (modules loaded twice, repeated
 * installs). Throws when there is no such method (the library changed).
 */
export function wrapMethod<F extends (this: never, ...args: never[]) => unknown>(proto: object, name: string, mark: symbol, wrap: (original: F) => F): void {
  if (Reflect.get(proto, mark) === true) return;
  const original = Reflect.get(proto, name) as unknown;
  if (typeof original !== 'function') throw new Error(`internals: ${name} is not a method of ${proto.constructor?.name ?? 'this prototype'} (the library changed)`);
  Reflect.set(proto, name, wrap(original as F));
  Reflect.set(proto, mark, true);
}
