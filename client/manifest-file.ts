import { readFile } from 'node:fs/promises';
import { parseAllDocuments } from 'yaml';

// Reading a manifest file (YAML or JSON, one or many documents) into plain values; model/ validates them.

export type ManifestFile = { documents: unknown[] } | { problem: string };

export async function readManifestFile(path: string): Promise<ManifestFile> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return { problem: code === 'ENOENT' ? 'no such file' : `cannot be read (${code ?? String(err)})` };
  }
  return parseManifestText(text);
}

export function parseManifestText(text: string): ManifestFile {
  const docs = parseAllDocuments(text);
  // parseAllDocuments returns an EmptyStream for empty input and a list otherwise.
  const list = Array.isArray(docs) ? docs : [];
  for (const doc of list) {
    const first = doc.errors[0];
    if (first) return { problem: `is not valid YAML: ${first.message.split('\n')[0]!.replace(/:$/, '')}` };
  }
  try {
    return { documents: list.map((doc) => doc.toJS({ maxAliasCount: 100 }) as unknown) };
  } catch (err) {
    // toJS refuses an alias bomb (too many alias expansions) and similar abuse.
    return { problem: `cannot be read: ${err instanceof Error ? err.message : String(err)}` };
  }
}
