import { lazy, Suspense, type ComponentType } from 'react';
import { createBrowserRouter } from 'react-router';
import { Loading } from './components/feedback';
import { Layout } from './routes/layout';

/** Each page is its own chunk, loaded when first visited. */
const page = (load: () => Promise<{ default: ComponentType }>) => {
  const Page = lazy(load);
  return (
    <Suspense fallback={<Loading />}>
      <Page />
    </Suspense>
  );
};

export const router = createBrowserRouter([
  { path: '/', element: page(() => import('./routes/chooser')) },
  { path: '/o/:slug/sign-in', element: page(() => import('./routes/sign-in')) },
  // The customer portal (DESIGN.md 12): outside the operator's layout, with its own session.
  { path: '/o/:slug/portal', element: page(() => import('./routes/portal')) },
  { path: '/o/:slug/portal/:code', element: page(() => import('./routes/portal-open')) },
  { path: '/platform/sign-in', element: page(() => import('./routes/platform-sign-in')) },
  {
    path: '/platform',
    element: page(() => import('./routes/platform-layout')),
    children: [
      { index: true, element: page(() => import('./routes/platform-organisations')) },
      { path: 'activity', element: page(() => import('./routes/platform-activity')) },
      { path: 'passkeys', element: page(() => import('./routes/platform-passkeys')) },
      { path: '*', element: page(() => import('./routes/not-found')) },
    ],
  },
  {
    path: '/o/:slug',
    element: <Layout />,
    children: [
      { index: true, element: page(() => import('./routes/dashboard')) },
      { path: 'licences', element: page(() => import('./routes/licences')) },
      { path: 'licences/:lid', element: page(() => import('./routes/licence')) },
      { path: 'products', element: page(() => import('./routes/products')) },
      { path: 'products/:id', element: page(() => import('./routes/product')) },
      { path: 'products/:id/releases', element: page(() => import('./routes/product/releases')) },
      { path: 'products/:id/releases/:releaseId', element: page(() => import('./routes/product/release')) },
      { path: 'customers', element: page(() => import('./routes/customers')) },
      { path: 'customers/:id', element: page(() => import('./routes/customer')) },
      { path: 'members', element: page(() => import('./routes/members')) },
      { path: 'tokens', element: page(() => import('./routes/tokens')) },
      { path: 'webhooks', element: page(() => import('./routes/webhooks')) },
      { path: 'integrations', element: page(() => import('./routes/integrations')) },
      { path: 'integrations/:id', element: page(() => import('./routes/integration')) },
      { path: 'activity', element: page(() => import('./routes/activity')) },
      { path: 'settings', element: page(() => import('./routes/settings')) },
      { path: 'verify', element: page(() => import('./routes/verify')) },
      { path: '*', element: page(() => import('./routes/not-found')) },
    ],
  },
]);
