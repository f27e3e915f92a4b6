import packageJson from "../package.json" with { type: "json" };

/** This CLI's version, from its package.json (inlined by the build), so a release bump moves it. */
export const VERSION: string = packageJson.version;
