/** A phone number (or a BSUID) as text that stays left to right inside right-to-left text. */
export function Phone({ n }: { n: string }) {
  return (
    <bdi dir="ltr" class="phone">
      {n}
    </bdi>
  );
}
