// One part of vendor-data (seed.ts writes them as MIME multipart): its shape and the checks a
// part must pass, kept apart from the seed builder so that the configuration's schema
// (images.<name>.vendorData) checks parts the same way without loading the ISO writer.

export interface VendorDataPart {
  /** A MIME type cloud-init handles, e.g. `text/cloud-config`, `text/x-shellscript`. */
  readonly contentType: string;
  readonly content: string;
  /** 1..64 characters of [A-Za-z0-9._-]; cloud-init names part files after it. */
  readonly filename?: string | undefined;
}

const CONTENT_TYPE_PATTERN = /^[a-z0-9][a-z0-9!#$&^_.+-]*\/[a-z0-9][a-z0-9!#$&^_.+-]*$/i;
const FILENAME_PATTERN = /^[A-Za-z0-9._-]{1,64}$/;

/** What is wrong with a part, naming its field; undefined when it can be written. */
export function vendorPartProblem(
  part: VendorDataPart,
): { field: 'contentType' | 'filename'; value: string; message: string } | undefined {
  if (!CONTENT_TYPE_PATTERN.test(part.contentType)) {
    return { field: 'contentType', value: part.contentType, message: 'is not a MIME type' };
  }
  if (part.filename !== undefined && !FILENAME_PATTERN.test(part.filename)) {
    return {
      field: 'filename',
      value: part.filename,
      message: 'is not 1..64 characters of [A-Za-z0-9._-]',
    };
  }
  return undefined;
}
