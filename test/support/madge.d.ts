// The part of madge's API (madge 8, which ships no types) that the import-cycle test uses.
declare module 'madge' {
  interface MadgeResult {
    /** each file and the files it imports, paths relative to baseDir */
    obj(): Record<string, string[]>;
    /** each circle as the files along it */
    circular(): string[][];
  }
  interface MadgeConfig {
    baseDir?: string;
    fileExtensions?: string[];
    excludeRegExp?: RegExp[];
    detectiveOptions?: Record<string, Record<string, unknown>>;
    tsConfig?: string;
  }
  export default function madge(path: string | string[], config?: MadgeConfig): Promise<MadgeResult>;
}
