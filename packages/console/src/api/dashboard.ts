import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { key } from './action';
import { api, unwrap, type Answer, type Query } from './client';

export type Entry = Answer<'/dashboard/activity', 'get'>['items'][number];

export const useDashboard = () => useQuery({ queryKey: key('dashboard'), queryFn: () => unwrap(api().GET('/dashboard')) });
export const useActivity = (query: Query<'listActivity'>) =>
  useQuery({
    queryKey: key('activity', query),
    queryFn: () => unwrap(api().GET('/dashboard/activity', { params: { query } })),
    placeholderData: keepPreviousData,
  });

export type UsageMeter = Answer<'/dashboard/usage', 'get'>['meters'][number];

/** The top consumers of each meter this period (DESIGN.md 19). */
export const useDashboardUsage = () => useQuery({ queryKey: key('dashboard', 'usage'), queryFn: () => unwrap(api().GET('/dashboard/usage')) });
