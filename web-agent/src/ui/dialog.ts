/** A native `<dialog>` mounted at the end of the body: modal, Escape closes it, the page behind is inert. */
export function mountDialog(o: { className: string; testid: string; labelledBy: string }): HTMLDialogElement {
  const dialog = document.createElement('dialog');
  dialog.className = o.className;
  dialog.dataset.testid = o.testid;
  dialog.setAttribute('aria-labelledby', o.labelledBy);
  document.body.append(dialog);
  return dialog;
}
