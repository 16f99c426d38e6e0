import { describe, expect, it } from 'vitest';
import { allOpDefs, type FamilyTable } from './registry.ts';
import * as basicOps from './basicOps.ts';

// The check is the typecheck (npm test runs it): a table keyed by a family's declared ops
// refuses one left out and one from elsewhere, so the cost model's pricing cannot drift.
describe('FamilyTable', () => {
  it("holds exactly its family's ops", () => {
    const basic: FamilyTable<'basicOps', number> = { linear: 1, add: 2, sliceCols: 3, embed: 4 };
    // @ts-expect-error a declared op left out
    const missing: FamilyTable<'basicOps', number> = { linear: 1, add: 2, sliceCols: 3 };
    // @ts-expect-error an op of another family
    const foreign: FamilyTable<'basicOps', number> = { linear: 1, add: 2, sliceCols: 3, embed: 4, moeRoute: 5 };
    expect(Object.keys(basic).sort()).toEqual(
      Object.values(basicOps)
        .map((d) => d.name)
        .sort(),
    );
    expect(allOpDefs().some((d) => d.name === 'moeRoute')).toBe(true);
    expect([missing, foreign]).toHaveLength(2);
  });
});
