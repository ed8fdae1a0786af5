// An ISO 9660 image of a flat set of files, written in memory: the primary tree with level-1
// 8.3 names plus Rock Ridge (real names, modes, times), and a Joliet tree with the real names.
// Enough for a cloud-init seed and nothing more: no subdirectories, no files over the cap.
//
// Layout, in 2048-byte sectors (the same order genisoimage uses, so every reader is at home:
// directories before the data, the continuation area after the directories that point to it):
//   0-15  system area, zero
//   16    primary volume descriptor      17  Joliet supplementary volume descriptor
//   18    volume descriptor set terminator
//   19-20 primary path tables, L then M  21-22  Joliet path tables, L then M
//   23..  primary root directory, then Joliet root directory, then one sector of Rock Ridge
//         continuation area (the ER entry), then each file's data from a sector boundary
// Same files, label and timestamp give the same bytes.
import { quoteForError, SeedError } from './errors.js';
import {
  directoryRecord,
  FIRST_DESCRIPTOR_SECTOR,
  packDirectory,
  rootPathTable,
  SECTOR_SIZE,
  terminatorDescriptor,
  ucs2be,
  volumeDescriptor,
} from './iso9660-records.js';
import {
  MODE_DIRECTORY,
  MODE_REGULAR,
  rripNM,
  rripPX,
  rripTF,
  suspCE,
  suspER,
  suspSP,
} from './rock-ridge.js';

export interface IsoFile {
  /** 1..64 characters of [a-z0-9._-]; stored as is in Rock Ridge and Joliet. */
  readonly name: string;
  readonly data: Uint8Array;
}

export interface IsoOptions {
  /** 1..16 characters of [A-Za-z0-9_-], stored as given (what blkid reports as LABEL). */
  readonly volumeId: string;
  /** Up to 64 a-characters (upper case, digits, space and `_!"%&'()*+,-./:;<=>?`). */
  readonly applicationId?: string;
  /** Every date in the image; pass a fixed one for reproducible bytes. Default: now. */
  readonly timestamp?: Date;
}

/** The most file data one image holds: far above any real seed (EC2 caps user-data at 16 KB). */
export const ISO_MAX_DATA_BYTES = 16 * 1024 * 1024;

/** Joliet allows 64 UCS-2 characters per name; Rock Ridge and the seed need no more. */
const NAME_PATTERN = /^[a-z0-9._-]{1,64}$/;
const VOLUME_ID_PATTERN = /^[A-Za-z0-9_-]{1,16}$/;
const APPLICATION_ID_PATTERN = /^[A-Z0-9 _!"%&'()*+,\-./:;<=>?]{0,64}$/;

const PATH_TABLE_SECTOR = FIRST_DESCRIPTOR_SECTOR + 3;
const ROOT_DIRECTORY_SECTOR = PATH_TABLE_SECTOR + 4;

interface PlannedFile {
  readonly name: string;
  readonly data: Uint8Array;
  /** Level-1 identifier with version, e.g. `META_DAT.;1`. */
  readonly levelOneId: string;
}

/** Where each piece goes. Two passes: a directory's size does not depend on the extents. */
interface Placement {
  readonly primaryRoot: number;
  readonly primarySectors: number;
  readonly jolietRoot: number;
  readonly jolietSectors: number;
  readonly continuation: number;
  /** Extent per file name. */
  readonly extents: ReadonlyMap<string, number>;
  readonly totalSectors: number;
}

/** Builds the image. Throws SeedError for names, sizes or options it cannot write. */
export function buildIso9660(files: readonly IsoFile[], options: IsoOptions): Buffer {
  const date = checkOptions(options);
  const applicationId = options.applicationId ?? '';
  const planned = planFiles(files);

  const provisional = placeAll(planned, { primarySectors: 1, jolietSectors: 1 });
  const primarySectors = primaryDirectory(planned, provisional, date).length / SECTOR_SIZE;
  const jolietSectors = jolietDirectory(planned, provisional, date).length / SECTOR_SIZE;
  const place = placeAll(planned, { primarySectors, jolietSectors });

  const image = Buffer.alloc(place.totalSectors * SECTOR_SIZE);
  const at = (sector: number): number => sector * SECTOR_SIZE;
  const descriptor = (kind: 'primary' | 'joliet'): Buffer =>
    volumeDescriptor({
      kind,
      volumeId: options.volumeId,
      applicationId,
      volumeSectors: place.totalSectors,
      pathTableL: PATH_TABLE_SECTOR + (kind === 'primary' ? 0 : 2),
      pathTableM: PATH_TABLE_SECTOR + (kind === 'primary' ? 1 : 3),
      rootRecord: rootRecord(kind, place, date),
      date,
    });
  descriptor('primary').copy(image, at(FIRST_DESCRIPTOR_SECTOR));
  descriptor('joliet').copy(image, at(FIRST_DESCRIPTOR_SECTOR + 1));
  terminatorDescriptor().copy(image, at(FIRST_DESCRIPTOR_SECTOR + 2));
  rootPathTable(place.primaryRoot, 'L').copy(image, at(PATH_TABLE_SECTOR));
  rootPathTable(place.primaryRoot, 'M').copy(image, at(PATH_TABLE_SECTOR + 1));
  rootPathTable(place.jolietRoot, 'L').copy(image, at(PATH_TABLE_SECTOR + 2));
  rootPathTable(place.jolietRoot, 'M').copy(image, at(PATH_TABLE_SECTOR + 3));
  primaryDirectory(planned, place, date).copy(image, at(place.primaryRoot));
  jolietDirectory(planned, place, date).copy(image, at(place.jolietRoot));
  suspER().copy(image, at(place.continuation));
  for (const file of planned) image.set(file.data, at(extentOf(place, file.name)));
  return image;
}

function checkOptions(options: IsoOptions): Date {
  if (!VOLUME_ID_PATTERN.test(options.volumeId)) {
    throw new SeedError(
      'ERR_SEED_INVALID',
      'volumeId',
      `${quoteForError(options.volumeId)} is not 1..16 characters of [A-Za-z0-9_-]`,
    );
  }
  if (options.applicationId !== undefined && !APPLICATION_ID_PATTERN.test(options.applicationId)) {
    throw new SeedError(
      'ERR_SEED_INVALID',
      'applicationId',
      `${quoteForError(options.applicationId)} is not up to 64 ISO 9660 a-characters`,
    );
  }
  const date = options.timestamp ?? new Date();
  const year = date.getUTCFullYear();
  // A directory record stores the year as one byte from 1900.
  if (Number.isNaN(date.getTime()) || year < 1900 || year > 2155) {
    throw new SeedError('ERR_SEED_INVALID', 'timestamp', 'must be a date in the years 1900..2155');
  }
  return date;
}

/** Validates names and sizes, gives each file its level-1 name, sorts by it (§9.3). */
function planFiles(files: readonly IsoFile[]): PlannedFile[] {
  const seen = new Set<string>();
  let total = 0;
  files.forEach((file, index) => {
    const field = `files[${index}].name`;
    if (file.name.includes('/')) {
      throw new SeedError(
        'ERR_SEED_FILE_NAME',
        field,
        `${quoteForError(file.name)} is a path; only files in the root directory are supported`,
      );
    }
    if (!NAME_PATTERN.test(file.name) || file.name === '.' || file.name === '..') {
      throw new SeedError(
        'ERR_SEED_FILE_NAME',
        field,
        `${quoteForError(file.name)} is not 1..64 characters of [a-z0-9._-] (nor "." or "..")`,
      );
    }
    if (seen.has(file.name)) {
      throw new SeedError('ERR_SEED_FILE_NAME', field, `${quoteForError(file.name)} appears twice`);
    }
    seen.add(file.name);
    total += file.data.byteLength;
  });
  if (total > ISO_MAX_DATA_BYTES) {
    const sizes = files.map((f) => `${f.name} ${f.data.byteLength}`).join(', ');
    throw new SeedError(
      'ERR_SEED_TOO_LARGE',
      'files',
      `${total} bytes in all (${sizes}), over the ${ISO_MAX_DATA_BYTES}-byte limit`,
    );
  }
  const ids = levelOneIdentifiers(files.map((f) => f.name));
  return files
    .map((f) => ({ name: f.name, data: f.data, levelOneId: ids.get(f.name) ?? '' }))
    .sort((a, b) => compareLevelOne(a.levelOneId, b.levelOneId));
}

/**
 * Level-1 names (§7.5.1: up to 8 d-characters, a dot, up to 3, ";1") for the primary tree,
 * which readers without Rock Ridge or Joliet see. Lower case becomes upper, other characters
 * `_`, the last dot (not a leading one) splits name from extension. Clashes are resolved in
 * sorted order by ending the name in a counter: `META_DA1.;1`. Depends only on the name set.
 */
export function levelOneIdentifiers(names: readonly string[]): Map<string, string> {
  const natural = new Map(names.map((name) => [name, naturalLevelOne(name)]));
  const counts = new Map<string, number>();
  for (const id of natural.values()) counts.set(id.join('.'), (counts.get(id.join('.')) ?? 0) + 1);
  const taken = new Set<string>();
  const result = new Map<string, string>();
  for (const [name, [base, ext]] of natural) {
    if (counts.get(`${base}.${ext}`) === 1) {
      taken.add(`${base}.${ext}`);
      result.set(name, `${base}.${ext};1`);
    }
  }
  for (const name of [...names].sort()) {
    if (result.has(name)) continue;
    const [base, ext] = natural.get(name) ?? ['', ''];
    for (let n = 1; ; n += 1) {
      const suffix = String(n);
      const candidate = `${base.slice(0, 8 - suffix.length)}${suffix}.${ext}`;
      if (!taken.has(candidate)) {
        taken.add(candidate);
        result.set(name, `${candidate};1`);
        break;
      }
    }
  }
  return result;
}

function naturalLevelOne(name: string): [base: string, ext: string] {
  const dChars = (s: string): string => s.toUpperCase().replace(/[^A-Z0-9]/g, '_');
  const dot = name.lastIndexOf('.');
  if (dot <= 0 || dot === name.length - 1) return [dChars(name).slice(0, 8), ''];
  return [dChars(name.slice(0, dot)).slice(0, 8), dChars(name.slice(dot + 1)).slice(0, 3)];
}

/** §9.3: by name, then extension, each padded with spaces; versions are all 1. */
function compareLevelOne(a: string, b: string): number {
  const split = (id: string): [string, string] => {
    const [base = '', rest = ''] = id.split('.');
    return [base.padEnd(8, ' '), rest.replace(';1', '').padEnd(3, ' ')];
  };
  const [aBase, aExt] = split(a);
  const [bBase, bExt] = split(b);
  return aBase < bBase ? -1 : aBase > bBase ? 1 : aExt < bExt ? -1 : aExt > bExt ? 1 : 0;
}

function placeAll(
  planned: readonly PlannedFile[],
  sizes: { primarySectors: number; jolietSectors: number },
): Placement {
  const primaryRoot = ROOT_DIRECTORY_SECTOR;
  const jolietRoot = primaryRoot + sizes.primarySectors;
  const continuation = jolietRoot + sizes.jolietSectors;
  let next = continuation + 1;
  const extents = new Map<string, number>();
  // An empty file points at the next free sector and takes none, as genisoimage does.
  for (const file of planned) {
    extents.set(file.name, next);
    next += Math.ceil(file.data.byteLength / SECTOR_SIZE);
  }
  return { primaryRoot, jolietRoot, continuation, extents, totalSectors: next, ...sizes };
}

function extentOf(place: Placement, name: string): number {
  const extent = place.extents.get(name);
  if (extent === undefined) throw new Error(`no extent planned for ${name}`);
  return extent;
}

/** The root's 34-byte record as the volume descriptors carry it (no system use). */
function rootRecord(kind: 'primary' | 'joliet', place: Placement, date: Date): Buffer {
  const primary = kind === 'primary';
  return directoryRecord({
    extent: primary ? place.primaryRoot : place.jolietRoot,
    size: (primary ? place.primarySectors : place.jolietSectors) * SECTOR_SIZE,
    date,
    directory: true,
    identifier: Buffer.of(0),
  });
}

/**
 * The primary root: ".", "..", then the files in level-1 order, each with Rock Ridge entries.
 * "." starts with SP (SUSP in use) and continues through CE into the ER entry.
 */
function primaryDirectory(planned: readonly PlannedFile[], place: Placement, date: Date): Buffer {
  const size = place.primarySectors * SECTOR_SIZE;
  const dirPosix = Buffer.concat([rripPX(MODE_DIRECTORY, 2), rripTF(date)]);
  const er = suspER();
  const dot = Buffer.concat([suspSP(), dirPosix, suspCE(place.continuation, 0, er.length)]);
  const common = { extent: place.primaryRoot, size, date, directory: true } as const;
  const records = [
    directoryRecord({ ...common, identifier: Buffer.of(0), systemUse: dot }),
    directoryRecord({ ...common, identifier: Buffer.of(1), systemUse: dirPosix }),
    ...planned.map((file) =>
      directoryRecord({
        extent: extentOf(place, file.name),
        size: file.data.byteLength,
        date,
        directory: false,
        identifier: Buffer.from(file.levelOneId, 'ascii'),
        systemUse: Buffer.concat([rripNM(file.name), rripPX(MODE_REGULAR, 1), rripTF(date)]),
      }),
    ),
  ];
  return packDirectory(records);
}

/** The Joliet root: ".", "..", then the files by UCS-2 name, without version suffix. */
function jolietDirectory(planned: readonly PlannedFile[], place: Placement, date: Date): Buffer {
  const size = place.jolietSectors * SECTOR_SIZE;
  const common = { extent: place.jolietRoot, size, date, directory: true } as const;
  const byName = [...planned].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return packDirectory([
    directoryRecord({ ...common, identifier: Buffer.of(0) }),
    directoryRecord({ ...common, identifier: Buffer.of(1) }),
    ...byName.map((file) =>
      directoryRecord({
        extent: extentOf(place, file.name),
        size: file.data.byteLength,
        date,
        directory: false,
        identifier: ucs2be(file.name),
      }),
    ),
  ]);
}
