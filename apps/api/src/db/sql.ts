// The one statement type of the server: every raw SQL statement is built from fragments. `sql`
// templates nest, every interpolated value becomes a parameter, and parameters are numbered only
// when the whole statement is rendered, so no two places share a `$N`. A `param` is one named
// input: used any number of times, in any fragment, it is one parameter (sent once, one type).
// A statement runs on a pg client or pool as it is (`db.query(statement)`: it has the `text` and
// `values` of a query), and on Prisma through `prismaRows` / `prismaExecute`.

/** One input of a statement: every place it is interpolated refers to the same parameter. */
export class Param {
  constructor(readonly value: unknown) {}
}

type Part = string | Param | Sql;

/** A piece of SQL and its inputs; passed to `pg` as it is (it has the `text` and `values` of a query). */
export class Sql {
  private rendered?: { text: string; values: unknown[] };
  constructor(private readonly parts: readonly Part[]) {}

  get text(): string {
    return this.render().text;
  }

  get values(): unknown[] {
    return this.render().values;
  }

  /** The fragment as a statement: its parameters numbered $1, $2, … in order of first appearance. */
  private render() {
    if (this.rendered) return this.rendered;
    const numbers = new Map<Param, number>();
    const values: unknown[] = [];
    let text = "";
    const walk = (parts: readonly Part[]) => {
      for (const part of parts) {
        if (typeof part === "string") text += part;
        else if (part instanceof Sql) walk(part.parts);
        else {
          let n = numbers.get(part);
          if (n === undefined) {
            n = values.push(part.value);
            numbers.set(part, n);
          }
          text += `$${n}`;
        }
      }
    };
    walk(this.parts);
    this.rendered = { text, values };
    return this.rendered;
  }
}

/** A fragment: interpolated fragments are spliced, params are kept, anything else is a new parameter. */
export function sql(strings: TemplateStringsArray, ...values: unknown[]): Sql {
  const parts: Part[] = [strings[0]!];
  for (const [i, v] of values.entries()) parts.push(v instanceof Sql || v instanceof Param ? v : new Param(v), strings[i + 1]!);
  return new Sql(parts);
}

/** A named input, to interpolate wherever the statement needs it. */
export const param = (value: unknown) => new Param(value);

/** SQL text written by the program (an alias, a type, a keyword), never a value from outside. */
export const raw = (text: string) => new Sql([text]);

export const empty = raw("");

/** The fragments one after another, `separator` (SQL text) between them. */
export const join = (fragments: readonly Sql[], separator: string) =>
  new Sql(fragments.flatMap((f, i) => (i === 0 ? [f] : [separator, f])));

/** A table or column name written by the program, checked to be a plain lower-case identifier, quoted. */
export function ident(name: string): Sql {
  if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`not a plain identifier: ${JSON.stringify(name)}`);
  return raw(`"${name}"`);
}

/** `LIMIT n`, the number a parameter. */
export const limit = (n: number) => sql`LIMIT ${n}::int`;

/** What Prisma's client and its transactions offer to run raw statements. */
export interface PrismaRaw {
  $queryRawUnsafe<T = unknown>(query: string, ...values: unknown[]): Promise<T>;
  $executeRawUnsafe(query: string, ...values: unknown[]): Promise<number>;
}

/** The rows of a statement run through Prisma (a client or a transaction). */
export const prismaRows = <T>(db: PrismaRaw, statement: Sql): Promise<T[]> => db.$queryRawUnsafe<T[]>(statement.text, ...statement.values);

/** Runs a statement through Prisma: how many rows it changed. */
export const prismaExecute = (db: PrismaRaw, statement: Sql): Promise<number> => db.$executeRawUnsafe(statement.text, ...statement.values);
