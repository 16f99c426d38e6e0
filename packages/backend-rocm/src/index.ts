export * from './nativeAddon.ts';
export * from './nativeErrors.ts';
export * from './nativeDevice.ts';
export * from './rocmBackend.ts';
export * from './rocmDevices.ts';
export * from './comm/collectiveWatchdog.ts';
export * from './comm/mpiCommunicator.ts';
export * from './comm/ncclCommunicator.ts';
