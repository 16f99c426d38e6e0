export * from './nativeAddon.ts';
export * from './nativeErrors.ts';
export * from './hostDevice.ts';
export * from './rocmBackend.ts';
