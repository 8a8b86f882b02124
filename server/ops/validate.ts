/**
 * Request bodies and queries through zod, with one 400: `BAD_REQUEST`, the message
 * `<field>: <rule>` and `error.field` naming the field (`body` for the body as a whole, a
 * dotted path such as `template.name` or `streamIds[2]` inside it, the parameter's name in a
 * query). Every route reads its body with `parseBody` and its query with `parseQuery`.
 */
import type { Context } from 'hono';
import { z } from 'zod';
import { HttpBadRequest } from './errors.ts';

/** Where the input came from: names the whole, and unknown keys. */
type Part = 'body' | 'query';

/** The first issue of a zod error as the one 400. */
export function badRequest(e: z.ZodError, part: Part, known?: readonly string[]): HttpBadRequest {
  const i = e.issues[0]!;
  let path = i.path.map((p, n) => (typeof p === 'number' ? `[${p}]` : `${n > 0 ? '.' : ''}${String(p)}`)).join('');
  let rule = i.message;
  if (i.code === 'unrecognized_keys') {
    path = `${path ? `${path}.` : ''}${i.keys[0]}`;
    rule = part === 'query' ? `unknown query parameter${known ? `; known: ${known.join(', ')}` : ''}` : `unknown field${known ? ` (expected ${known.join(', ')})` : ''}`;
  }
  const field = path || part;
  return new HttpBadRequest(`${field}: ${rule}`, { field });
}

const keysOf = (schema: z.ZodType): string[] | undefined => (schema instanceof z.ZodObject ? Object.keys(schema.shape) : undefined);

/** The JSON body, parsed by `schema`; `shape` describes it for a body that is not JSON. */
export async function parseBody<S extends z.ZodType>(c: Context, schema: S, shape: string): Promise<z.output<S>> {
  let raw: unknown;
  try {
    raw = await c.req.json();
  } catch {
    throw new HttpBadRequest(`body: must be JSON ${shape}`, { field: 'body' });
  }
  const r = schema.safeParse(raw);
  if (!r.success) throw badRequest(r.error, 'body', keysOf(schema));
  return r.data;
}

/** The query as single values (a parameter given twice is refused), parsed by `schema`. */
export function parseQuery<S extends z.ZodType>(c: Context, schema: S): z.output<S> {
  const one: Record<string, string> = {};
  for (const [k, values] of Object.entries(c.req.queries())) {
    if (values.length > 1) throw new HttpBadRequest(`${k}: give it at most once`, { field: k });
    one[k] = values[0]!;
  }
  const r = schema.safeParse(one);
  if (!r.success) throw badRequest(r.error, 'query', keysOf(schema));
  return r.data;
}

/** `limit` of the ops lists: an integer from 1 to `max`, `fallback` when absent. */
export const limitParam = (fallback: number, max: number) =>
  z
    .string()
    .regex(/^\d{1,7}$/, `must be an integer from 1 to ${max}`)
    .transform(Number)
    .pipe(z.number().min(1, `must be an integer from 1 to ${max}`).max(max, `must be an integer from 1 to ${max}`))
    .default(fallback);
