/** What the desk's work area is drawn from (desk-view.tsx, desk-message.tsx) and what it can do. */
import type { AgentStateMsg } from '../../../../shared/protocol.ts';
import type { MessageState } from '../../desk/message.ts';
import type { DeskState } from '../../desk/state.ts';
import type { EndedCall } from '../../reducer.ts';

export interface DeskActions {
  moreTime(): void;
  chooseAwayReason(reason: string): void;
  editWrap(edit: { disposition?: string; notes?: string }): void;
  saveWrap(): void;
  closeWrap(): void;
  openCustomer(id: string): void;
  reloadLog(): void;
  editMessage(edit: { mode?: 'text' | 'template'; text?: string; template?: string; parameter?: { index: number; value: string } }): void;
  sendMessage(from: string): void;
}

export interface DeskProps {
  desk: DeskState;
  /** "Send a message" in the customer panel. */
  messages: MessageState;
  agent?: Omit<AgentStateMsg, 'type'> | undefined;
  /** Server time now (local clock plus the skew). */
  serverNow: number;
  online: boolean;
  available: boolean;
  /** A call is held (here or in another tab). */
  inCall: boolean;
  /** The agent typed into the wrap-up just now (the server's countdown stands still). */
  typing: boolean;
  /** The call that just ended here (its summary heads its wrap-up). */
  ended?: EndedCall | undefined;
  /** This session's calls (the reducer's), for the call list until history has them. */
  session: readonly EndedCall[];
  actions: DeskActions;
  /** Dial a call back (`from` business number, `to` customer); absent where the page cannot dial. */
  dial?: ((from: string, to: string) => void) | undefined;
}
