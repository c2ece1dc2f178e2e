/**
 * The console's one script, served from the app (CSP script-src 'self'): as the owner types in a
 * group's member search, it asks the group's candidates route and lists the users found as buttons
 * that add the user. Without it the same form works as a plain search (press Add, pick a result).
 */
export const MEMBER_SEARCH_JS = `
(() => {
  const input = document.querySelector('input[data-candidates]');
  const list = document.getElementById('member-suggestions');
  if (!input || !list) return;
  let timer, asked = 0;
  const show = (users) => {
    list.replaceChildren(...users.map((u) => {
      const item = document.createElement('li');
      const button = document.createElement('button');
      button.type = 'submit';
      button.name = 'user';
      button.value = u.email;
      button.textContent = u.username + ' · ' + u.email + (u.name ? ' · ' + u.name : '');
      item.append(button);
      return item;
    }));
  };
  input.addEventListener('input', () => {
    clearTimeout(timer);
    const text = input.value.trim();
    if (!text) { show([]); return; }
    timer = setTimeout(async () => {
      const mine = ++asked;
      try {
        const response = await fetch(input.dataset.candidates + '?q=' + encodeURIComponent(text), { headers: { accept: 'application/json' }, redirect: 'error' });
        if (response.ok && mine === asked) show(await response.json());
      } catch {
        // A session that ended (the answer is a redirect to sign-in) or a lost connection: the form still works by Add.
        if (mine === asked) show([]);
      }
    }, 150);
  });
})();
`;
