// The image cache (SPEC §5), as the create operation uses it: the base volume of an image on a
// host, filled once per host and image, and the bytes a fill still needs for the pool-space
// precheck. The parts live in ./image/: names and lookups, the fill, HTTP, libvirt volumes.
export { baseVolumeName, markerVolumeName, type BaseImage } from './image/base-image.js';
export { ensureBaseImage, findBaseImage, imagePendingBytes } from './image/cache.js';
export { ImageContentError } from './image/fill.js';
