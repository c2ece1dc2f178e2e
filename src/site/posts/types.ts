export type PostStatus = 'publish' | 'draft';

export interface Post {
  id: number;
  slug: string;
  status: PostStatus;
  type: string;
  title: string;
  /** HTML. */
  content: string;
  /** The writing user's id; 0 for seeded posts. */
  authorId: number;
  createdAt: number;
  updatedAt: number;
}

/** Fields of create and update; undefined = not given (update keeps the value). */
export interface PostInput {
  title?: string;
  content?: string;
  slug?: string;
  status?: PostStatus;
}

export interface PostsPage {
  posts: Post[];
  total: number;
}
