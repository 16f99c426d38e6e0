// The shard files a model.safetensors.index.json names, confined to its model folder (issue:
// `"lm_head.weight": "../../../../etc/passwd"` opened that file). A shard path must be
// relative, stay inside the folder as written, and still be inside once symbolic links are
// resolved: a link in the folder may point only within the folder's real path, or, for a
// Hugging Face cache snapshot (<repo>/snapshots/<rev>/, whose files are links to
// <repo>/blobs/), within that repo's blobs folder. Checked when the index is opened.
import { realpathSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, relative, resolve } from 'node:path';
import { errnoReason } from '../io/fileErrors.ts';

function inside(path: string, folder: string): boolean {
  const rel = relative(folder, path);
  return rel !== '' && !rel.startsWith('..') && !isAbsolute(rel);
}

/** The folders a shard's real path may lie in. */
function allowedRoots(folder: string): string[] {
  const real = realpathSync(folder);
  const parent = dirname(real);
  return basename(parent) === 'snapshots' ? [real, join(dirname(parent), 'blobs')] : [real];
}

/** Tensor name -> shard path (resolved against the index's folder), every shard checked; errors name the index, a tensor and the path. */
export function confinedShards(indexPath: string, mapping: Readonly<Record<string, string>>): Map<string, string> {
  const folder = dirname(resolve(indexPath));
  const roots = allowedRoots(folder);
  const tensorsOf = new Map<string, string[]>();
  for (const [name, shard] of Object.entries(mapping)) {
    const list = tensorsOf.get(shard);
    if (list) list.push(name);
    else tensorsOf.set(shard, [name]);
  }
  const out = new Map<string, string>();
  for (const [shard, names] of tensorsOf) {
    const more = names.length > 1 ? ` and ${names.length - 1} more` : '';
    const fail = (shown: string, why: string): never => {
      throw new Error(`${indexPath}: names shard ${shown} (for tensor '${names[0]}'${more}), ${why}`);
    };
    const written = JSON.stringify(shard);
    if (shard === '') fail(written, 'an empty path');
    if (isAbsolute(shard)) fail(written, `an absolute path: an index may name only files in its model folder ${folder}`);
    const path = resolve(folder, shard);
    if (!inside(path, folder)) fail(written, `which is outside the model folder ${folder}`);
    let real: string;
    try {
      real = realpathSync(path);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      return fail(
        path,
        code === 'ENOENT' ? 'which does not exist' : code === 'ELOOP' ? 'which is a symbolic link loop' : `which cannot be read: ${errnoReason(e)}`,
      );
    }
    if (!roots.some((r) => inside(real, r))) fail(path, `a symbolic link to ${real}, which is outside the model folder ${folder}`);
    for (const name of names) out.set(name, path);
  }
  return out;
}
