// One hue per rank, shared by the band diagram and the heatmap's ownership strip.
const RANK_COLORS = ['#2563eb', '#059669', '#7c3aed', '#d97706', '#0891b2', '#db2777', '#65a30d', '#4b5563'];

export function rankColor(rank: number): string {
  return RANK_COLORS[rank % RANK_COLORS.length];
}

/** Fill of padding rows: hatched, defined once per SVG by paddingPattern(). */
export const PADDING_FILL = 'url(#padding-hatch)';
