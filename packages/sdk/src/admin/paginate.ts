// What a list method returns: an async iterable over every item, page after page, following
// `nextCursor`; one page on demand with `page()`.

export class Paginated<Item, Page extends { items: Item[]; nextCursor: string | null }> implements AsyncIterable<Item> {
  constructor(
    private readonly fetchPage: (cursor: string | undefined) => Promise<Page>,
    private readonly cursor: string | undefined,
  ) {}

  /** One request: the page at the query's `cursor` (the first page without one). */
  page(): Promise<Page> {
    return this.fetchPage(this.cursor);
  }

  /** Every page, from the query's `cursor` to the last (`nextCursor: null`). */
  async *pages(): AsyncGenerator<Page, void, undefined> {
    let cursor = this.cursor;
    for (;;) {
      const page = await this.fetchPage(cursor);
      yield page;
      if (!page.nextCursor || page.nextCursor === cursor) return;
      cursor = page.nextCursor;
    }
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<Item, void, undefined> {
    for await (const page of this.pages()) yield* page.items;
  }

  /** Every item of every page, in one array. */
  async toArray(): Promise<Item[]> {
    const items: Item[] = [];
    for await (const item of this) items.push(item);
    return items;
  }
}
