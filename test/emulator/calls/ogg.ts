/** The Ogg/Opus muxer, shared with the server (its voicemail messages): `shared/ogg.ts`. */
export * from '../../../shared/ogg.ts';
