/**
 * A session's device in words, from its User-Agent ("Chrome 120 on Linux"): what a user
 * needs to tell their sessions apart, nothing that fingerprints them further.
 */
const BROWSERS: Array<[RegExp, string]> = [
  [/Edg(?:e|A|iOS)?\/(\d+)/, 'Edge'],
  [/OPR\/(\d+)/, 'Opera'],
  [/Firefox\/(\d+)/, 'Firefox'],
  [/FxiOS\/(\d+)/, 'Firefox'],
  [/CriOS\/(\d+)/, 'Chrome'],
  [/HeadlessChrome\/(\d+)/, 'Headless Chrome'],
  [/Chrom(?:e|ium)\/(\d+)/, 'Chrome'],
  [/Version\/(\d+)[^ ]* (?:Mobile\/\S+ )?Safari\//, 'Safari'],
  [/curl\/(\d+)/, 'curl'],
  [/node|undici/i, 'a program'],
];
const SYSTEMS: Array<[RegExp, string]> = [
  [/iPhone|iPad|iPod/, 'iOS'],
  [/Android/, 'Android'],
  [/Windows/, 'Windows'],
  [/CrOS/, 'ChromeOS'],
  [/Mac OS X|Macintosh/, 'macOS'],
  [/Linux/, 'Linux'],
];

/**
 * The device as names without words, for pages to word in the user's language: the browser
 * with its major version ("Chrome 120"), the system ("Linux"), or `program` for a client
 * that is not a browser. Empty when the User-Agent says nothing known.
 */
export interface DeviceParts {
  browser?: string;
  system?: string;
  program?: true;
}

export function devicePartsOf(userAgent: string | undefined): DeviceParts {
  if (!userAgent) return {};
  let browser: string | undefined;
  let program = false;
  for (const [re, name] of BROWSERS) {
    const m = re.exec(userAgent);
    if (m) {
      if (name === 'a program') program = true;
      else browser = m[1] ? `${name} ${m[1]}` : name;
      break;
    }
  }
  const system = SYSTEMS.find(([re]) => re.test(userAgent))?.[1];
  return { ...(browser ? { browser } : {}), ...(system ? { system } : {}), ...(program ? { program: true as const } : {}) };
}

/** The device in English words (programs and logs; pages word `devicePartsOf` themselves). */
export function deviceOf(userAgent: string | undefined): string {
  const { browser, system, program } = devicePartsOf(userAgent);
  if (program) return 'a program';
  if (browser && system) return `${browser} on ${system}`;
  return browser ?? (system ? `a browser on ${system}` : 'unknown device');
}
