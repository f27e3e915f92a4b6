// Profiles: which profile an id an admin gives stands for (an anonymousId or a previous id is
// linked to one). Every capability that takes user ids from a request resolves them here.
export { canonicalIds, resolveDisjoint, resolveIdentity } from "./identities.ts";
