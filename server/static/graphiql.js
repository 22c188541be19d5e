// Starts GraphiQL on the page /graphql serves to a browser (server/graphiql.py): every
// file it needs is served by this server, so it works with no other origin reachable.
(function start() {
  const fetcher = GraphiQL.createFetcher({ url: new URL("/graphql", location.href).href });

  // The explorer plugin is a React hook: it lives in a component that owns the query.
  function App() {
    // The page carries the first query (server/graphiql.py): no inline script under the CSP.
    const first = document.getElementById("graphiql").dataset.query || "";
    const [query, setQuery] = React.useState(first);
    const explorer = GraphiQLPluginExplorer.useExplorerPlugin({ query, onEdit: setQuery });
    return React.createElement(GraphiQL, {
      fetcher,
      query,
      onEditQuery: setQuery,
      plugins: [explorer],
      defaultEditorToolsVisibility: true,
      isHeadersEditorEnabled: true,
      shouldPersistHeaders: false,
    });
  }

  // React 17 (what the distribution ships): ReactDOM.render, not createRoot.
  ReactDOM.render(React.createElement(App), document.getElementById("graphiql"));
})();
