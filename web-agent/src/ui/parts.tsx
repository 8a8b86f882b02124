/** Small Preact parts both call views use (agent page and Call back panel). */
import { chooseDevice, deviceOptions, type Device, type DeviceKind } from '../device-choice.ts';
import { pathWords, type Quality } from '../quality.ts';
import { t } from '../i18n/index.ts';

/** A microphone or speaker list; `preferred` is shown while it is listed, else the browser's default. */
export function DeviceSelect(p: { testid: string; describedBy?: string; devices: readonly Device[]; kind: DeviceKind; preferred: string | undefined; onChoose(id: string): void }) {
  const chosen = chooseDevice(p.devices, p.kind, p.preferred);
  return (
    <select data-testid={p.testid} aria-describedby={p.describedBy} value={chosen ?? ''} onChange={(e) => p.onChoose((e.target as HTMLSelectElement).value)}>
      {deviceOptions(p.devices, p.kind).map((o) => (
        <option key={o.value} value={o.value}>
          {o.label}
        </option>
      ))}
    </select>
  );
}

/** The line-quality box whose testids start with `prefix`: level, label and warnings. */
export function QualityBox({ prefix, quality, hidden, notice }: { prefix: string; quality: Quality | undefined; hidden?: boolean; notice?: string | undefined }) {
  return (
    <div class="quality" data-testid={prefix} data-level={quality?.level ?? 'unknown'} hidden={hidden}>
      <span class="quality-dot" aria-hidden="true" />
      <span class="quality-label" data-testid={`${prefix}-label`}>
        {quality?.label ?? t('quality.unknown')}
      </span>
      {quality?.path && (
        <span class="quality-path" data-testid={`${prefix}-path`} data-path={quality.path}>
          {' · '}
          {pathWords(quality.path)}
        </span>
      )}
      <ul class="quality-warnings" data-testid={`${prefix}-warnings`}>
        {notice && (
          <li key="network" data-testid={`${prefix}-network-warning`}>
            {notice}
          </li>
        )}
        {(quality?.warnings ?? []).map((w) => (
          <li key={w}>{w}</li>
        ))}
      </ul>
    </div>
  );
}

