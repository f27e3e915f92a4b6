// Statements built from fragments: `sql` templates nest, every interpolated value becomes a
// parameter, and parameters are numbered only when the whole statement is rendered, so no two
// places share a `$N`. A `param` is one named input: used any number of times, in any fragment,
// it is one parameter (sent once, one type). `Prisma.sql` numbers every occurrence apart, so a
// workspace id or a scope of thousands of ids used ten times in a statement would be sent ten
// times, each occurrence needing its own cast.

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
