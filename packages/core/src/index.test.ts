import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

// Core's public surface is curated (issue 26): each entry point (package.json "exports") lists
// its names one by one, and lists only names something outside core imports; core's own files
// and tests import relative paths, so a name they alone use stays out.
const root = resolve(import.meta.dirname, '../../..');
const core = join(root, 'packages/core');

const parse = (file: string, text: string): ts.SourceFile => ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
const isCoreSpecifier = (n: ts.Node | undefined): n is ts.StringLiteral => !!n && ts.isStringLiteral(n) && /^@hcsp\/core(\/|$)/.test(n.text);

/** The names one file takes from @hcsp/core and its subpaths, by specifier: named imports, re-exports, namespace members, dynamic imports. */
function importedFromCore(file: string, text: string): Map<string, Set<string>> {
  const found = new Map<string, Set<string>>();
  const add = (specifier: string, name: string) => (found.get(specifier) ?? found.set(specifier, new Set()).get(specifier)!).add(name);
  const namespaces = new Map<string, string>();
  const visit = (n: ts.Node): void => {
    if ((ts.isImportDeclaration(n) || ts.isExportDeclaration(n)) && isCoreSpecifier(n.moduleSpecifier)) {
      const specifier = n.moduleSpecifier.text;
      const bindings = ts.isImportDeclaration(n) ? n.importClause?.namedBindings : n.exportClause;
      if (bindings && (ts.isNamespaceImport(bindings) || ts.isNamespaceExport(bindings))) namespaces.set(bindings.name.text, specifier);
      else if (bindings) for (const e of bindings.elements) add(specifier, (e.propertyName ?? e.name).text);
      else add(specifier, '*');
    } else if (ts.isCallExpression(n) && n.expression.kind === ts.SyntaxKind.ImportKeyword && isCoreSpecifier(n.arguments[0])) {
      const specifier = n.arguments[0].text;
      let use = n.parent;
      while (ts.isAwaitExpression(use) || ts.isParenthesizedExpression(use)) use = use.parent;
      if (ts.isPropertyAccessExpression(use)) add(specifier, use.name.text);
      else if (ts.isVariableDeclaration(use) && ts.isObjectBindingPattern(use.name))
        for (const e of use.name.elements) add(specifier, ((e.propertyName ?? e.name) as ts.Identifier).text);
      else add(specifier, '*');
    } else if (ts.isPropertyAccessExpression(n) && ts.isIdentifier(n.expression) && namespaces.has(n.expression.text)) {
      add(namespaces.get(n.expression.text)!, n.name.text);
    } else if (ts.isQualifiedName(n) && ts.isIdentifier(n.left) && namespaces.has(n.left.text)) {
      add(namespaces.get(n.left.text)!, n.right.text);
    }
    ts.forEachChild(n, visit);
  };
  visit(parse(file, text));
  return found;
}

/** An entry point's exported names, and its `export *` lines (each one a failure). */
function entryExports(file: string, text: string): { names: string[]; exportStar: string[] } {
  const names: string[] = [];
  const exportStar: string[] = [];
  for (const s of parse(file, text).statements) {
    if (ts.isExportDeclaration(s)) {
      if (s.exportClause && ts.isNamedExports(s.exportClause)) names.push(...s.exportClause.elements.map((e) => e.name.text));
      else exportStar.push(s.getText());
    } else if (ts.canHaveModifiers(s) && ts.getModifiers(s)?.some((m) => m.kind === ts.SyntaxKind.ExportKeyword)) {
      names.push(
        ...(ts.isVariableStatement(s) ? s.declarationList.declarations.map((d) => d.name.getText()) : [(s as ts.DeclarationStatement).name!.getText()]),
      );
    }
  }
  return { names, exportStar };
}

describe("core's public surface", () => {
  it('reads what a file imports from core and what an entry exports', () => {
    const imports = importedFromCore(
      'x.ts',
      [
        "import { a, type B as C } from '@hcsp/core';",
        "import type { D } from '@hcsp/core/xcheck';",
        "import * as core from '@hcsp/core';",
        "export { e } from '@hcsp/core/node';",
        'const x = core.f; let t: core.G;',
        "const { h } = await import('@hcsp/core/node');",
        "const i = (await import('@hcsp/core')).i;",
        "import { z } from '@hcsp/core-other';",
      ].join('\n'),
    );
    expect(Object.fromEntries([...imports].map(([s, n]) => [s, [...n].sort()]))).toEqual({
      '@hcsp/core': ['B', 'G', 'a', 'f', 'i'],
      '@hcsp/core/node': ['e', 'h'],
      '@hcsp/core/xcheck': ['D'],
    });
    const entry = entryExports('index.ts', "export { a, type B } from './a.ts';\nexport * from './b.ts';\nexport const c = 1;\nexport function d() {}\n");
    expect(entry).toEqual({ names: ['a', 'B', 'c', 'd'], exportStar: ["export * from './b.ts';"] });
  });

  it('each entry point lists its names (no export *), each imported from it outside core', () => {
    const exportsField: Record<string, string> = JSON.parse(readFileSync(join(core, 'package.json'), 'utf8')).exports;
    const files = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard'], { cwd: root, encoding: 'utf8' })
      .split('\n')
      .filter((f) => /\.(ts|mts|mjs|js)$/.test(f) && !f.startsWith('packages/core/'));
    const imported = new Map<string, Set<string>>();
    for (const f of files) {
      let text: string;
      try {
        text = readFileSync(join(root, f), 'utf8');
      } catch {
        continue; // listed by git but deleted in the working tree
      }
      if (!text.includes('@hcsp/core')) continue;
      for (const [specifier, names] of importedFromCore(f, text))
        for (const n of names) (imported.get(specifier) ?? imported.set(specifier, new Set()).get(specifier)!).add(n);
    }
    expect(imported.get('@hcsp/core')?.size).toBeGreaterThan(100);
    for (const [sub, path] of Object.entries(exportsField)) {
      const specifier = sub === '.' ? '@hcsp/core' : `@hcsp/core/${sub.slice(2)}`;
      const { names, exportStar } = entryExports(path, readFileSync(join(core, path), 'utf8'));
      expect(exportStar, `${path}: export * (list the names a backend or tool imports)`).toEqual([]);
      const unused = names.filter((n) => !imported.get(specifier)?.has(n));
      expect(unused, `${path}: exported from '${specifier}' but imported from it nowhere outside core`).toEqual([]);
    }
  });
});
