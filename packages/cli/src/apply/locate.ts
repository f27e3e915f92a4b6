// Where a field of a document is in its file, as `file:line:column` (YAML and JSON alike: JSON is
// read for positions by the YAML parser), for messages that point at the line as compilers do.
import { isMap, isScalar, isSeq, type LineCounter, type Node } from "yaml";

/** The position of the field at `path` of a document, or of the nearest enclosing one that exists. */
export type Locate = (path: readonly PropertyKey[]) => string;

interface Ranged {
  range?: [number, number, number] | null;
}

/**
 * A `Locate` over the parsed node `root` (a document's contents, or an element of a top-level
 * list). A path ending at a map entry points at its key (the line that names the field); a path
 * through a field the file lacks points at the last one it has.
 */
export function locator(file: string, root: Node | null | undefined, lines: LineCounter): Locate {
  return (path) => {
    let node: unknown = root;
    let at: Ranged | null | undefined = root;
    for (const segment of path) {
      if (isMap(node)) {
        const pair = node.items.find((p) => isScalar(p.key) && String(p.key.value) === String(segment));
        if (!pair) break;
        at = (pair.key as Ranged | null) ?? at;
        node = pair.value;
      } else if (isSeq(node)) {
        const item = node.items[Number(segment)] as Ranged | undefined;
        if (item === undefined || typeof segment === "symbol" || !/^\d+$/.test(String(segment))) break;
        at = item;
        node = item;
      } else break;
    }
    const offset = at?.range?.[0];
    if (offset === undefined) return file;
    const { line, col } = lines.linePos(offset);
    return `${file}:${line}:${col}`;
  };
}
