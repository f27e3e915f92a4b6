// Pieces every page uses: an error line, a page's state before its first answer, a table of rows.
import type { ReactNode } from "react";

/** Says what went wrong (announced to screen readers); nothing without a message. */
export function Alert({ message }: { message: string | undefined }) {
  if (!message) return null;
  return (
    <p role="alert" className="error">
      {message}
    </p>
  );
}

/** What a page shows before its first answer: the error, else that it is loading. */
export function Pending({ error }: { error: string | undefined }) {
  return error ? <Alert message={error} /> : <p aria-busy="true">Loading…</p>;
}

/** A table: its column headings, then one row of cells per item. */
export function Table<T>({
  columns,
  rows,
  cells,
  rowKey,
}: {
  columns: string[];
  rows: T[];
  cells: (row: T) => ReactNode[];
  rowKey: (row: T) => string | number;
}) {
  return (
    <table>
      <thead>
        <tr>
          {columns.map((c) => (
            <th scope="col" key={c}>
              {c}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>
        {rows.map((r) => (
          <tr key={rowKey(r)}>
            {cells(r).map((cell, i) => (
              // biome-ignore lint/suspicious/noArrayIndexKey: a row's cells are fixed, in column order
              <td key={i}>{cell}</td>
            ))}
          </tr>
        ))}
      </tbody>
    </table>
  );
}
