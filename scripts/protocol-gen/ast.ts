// The AST of libvirt's .x files as the parser builds it: plain data, nothing resolved. Sizes,
// enum values and case labels may name constants defined later or in C headers.

/** A size, enum value or case label: a literal, or the name of a constant. */
export type Value =
  | { readonly kind: 'literal'; readonly value: number; readonly text: string }
  | {
      readonly kind: 'name';
      readonly name: string;
    };

export type PrimitiveName =
  | 'int'
  | 'unsigned int'
  | 'hyper'
  | 'unsigned hyper'
  | 'char'
  | 'unsigned char'
  | 'short'
  | 'unsigned short'
  | 'bool'
  | 'float'
  | 'double';

export type TypeSpec =
  | { readonly kind: 'primitive'; readonly name: PrimitiveName }
  | { readonly kind: 'string' }
  | { readonly kind: 'opaque' }
  | { readonly kind: 'ref'; readonly name: string };

export type Shape =
  | { readonly kind: 'scalar' }
  | { readonly kind: 'optional' }
  /** `<N>`; `max` is undefined for `<>` (unbounded). */
  | { readonly kind: 'varArray'; readonly max: Value | undefined }
  | { readonly kind: 'fixedArray'; readonly length: Value };

export interface Declaration {
  readonly name: string;
  readonly type: TypeSpec;
  readonly shape: Shape;
}

export interface UnionArm {
  readonly cases: readonly Value[];
  /** undefined for a `void` arm. */
  readonly decl: Declaration | undefined;
}

export interface EnumMember {
  readonly name: string;
  readonly value: Value;
  /** `@key: value` lines of the `/** *\/` comment just above the member. */
  readonly annotations: ReadonlyMap<string, readonly string[]>;
}

export type Definition =
  | { readonly kind: 'const'; readonly name: string; readonly value: Value }
  | { readonly kind: 'typedef'; readonly name: string; readonly decl: Declaration }
  | { readonly kind: 'enum'; readonly name: string; readonly members: readonly EnumMember[] }
  | { readonly kind: 'struct'; readonly name: string; readonly fields: readonly Declaration[] }
  | {
      readonly kind: 'union';
      readonly name: string;
      readonly discriminant: Declaration;
      readonly arms: readonly UnionArm[];
      /** undefined: no default arm; null: `default: void`. */
      readonly defaultArm: Declaration | null | undefined;
    };

export interface XdrFile {
  readonly file: string;
  readonly definitions: readonly Definition[];
}
