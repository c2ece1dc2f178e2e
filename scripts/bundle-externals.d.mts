/** Types of bundle-externals.mjs, for the tests that check the bundles. */
export const INLINED_PACKAGES: readonly string[];
export function bundleExternals(root?: string): string[];
