import { readdir, readFile, realpath, stat } from 'node:fs/promises';
import { extname, join, resolve } from 'node:path';
import { parseAllDocuments } from 'yaml';
import type { ValidationError } from '../model';

// Reading manifest files (YAML or JSON, one or many documents each) into plain values; model/ validates them.

export type ManifestFile = { documents: unknown[] } | { problem: string };

async function readManifestFile(path: string): Promise<ManifestFile> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    return { problem: unreadable(err) };
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

/** Documents read from the `-f` arguments, each with where it came from, or every reason some could not be read. */
export type ManifestSources =
  { sources: string[]; documents: unknown[]; origins: string[] } | { problems: ValidationError[] };

/** How standard input is named in messages, as the `-` argument that reads it. */
export const STDIN_NAME = '<stdin>';
const MANIFEST_EXTENSIONS = ['.yaml', '.yml', '.json'];

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

function unreadable(err: unknown): string {
  const code = (err as NodeJS.ErrnoException).code;
  return code === 'ENOENT' ? 'no such file' : `cannot be read (${code ?? String(err)})`;
}

/** The manifest files an argument names: itself, a directory's *.yaml, *.yml and *.json files (sorted), or stdin. */
async function expand(arg: string): Promise<string[] | { problem: string }> {
  if (arg === '-') return [arg];
  try {
    if (!(await stat(arg)).isDirectory()) return [arg];
    // As kubectl -f DIR without --recursive: the directory's own files only, in name order.
    const entries = await readdir(arg, { withFileTypes: true });
    const files = entries
      .filter((e) => !e.isDirectory() && MANIFEST_EXTENSIONS.includes(extname(e.name).toLowerCase()))
      .map((e) => join(arg, e.name))
      .sort();
    return files.length > 0 ? files : { problem: `holds no ${MANIFEST_EXTENSIONS.join(', ')} file` };
  } catch (err) {
    return { problem: unreadable(err) };
  }
}

/**
 * Reads manifests as `kubectl -f` does: each argument a file, a directory or `-` (standard input, at most once). Every
 * problem is reported at once; the documents come in argument order, then file order, then document order.
 */
export async function readManifestSources(
  args: readonly string[],
  stdin: () => Promise<string> = readStdin,
): Promise<ManifestSources> {
  const problems: ValidationError[] = [];
  const sources: string[] = [];
  /** Files read so far, by real path: `./d/a.yaml` and `d` (its directory) name one file. */
  const seen = new Set<string>();
  const documents: unknown[] = [];
  const origins: string[] = [];
  if (args.filter((a) => a === '-').length > 1) problems.push({ path: STDIN_NAME, message: 'is given more than once' });
  for (const arg of args) {
    const files = await expand(arg);
    if ('problem' in files) {
      problems.push({ path: arg, message: files.problem });
      continue;
    }
    for (const file of files) {
      const name = file === '-' ? STDIN_NAME : file;
      // A file named twice (say, itself and through its directory) is read once: its documents are not duplicates.
      const key = file === '-' ? STDIN_NAME : await realpath(file).catch(() => resolve(file));
      if (seen.has(key)) continue;
      seen.add(key);
      sources.push(name);
      const read = file === '-' ? parseManifestText(await stdin()) : await readManifestFile(file);
      if ('problem' in read) {
        problems.push({ path: name, message: read.problem });
        continue;
      }
      read.documents.forEach((doc, i) => {
        documents.push(doc);
        origins.push(`${name}:document[${i}]`);
      });
    }
  }
  return problems.length > 0 ? { problems } : { sources, documents, origins };
}
