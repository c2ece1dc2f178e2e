export interface Customer {
  id: number;
  customerKey: string;
  email: string;
  displayName: string;
  passwordExpiryDays: number | null;
  createdAt: number;
}

/** A customer as the signature check needs it: the opened API key travels no further. */
export interface CustomerWithApiKey {
  customer: Customer;
  apiKey: string;
}
